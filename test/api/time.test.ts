/**
 * Time-dependent logic, with the clock pinned through p_now: after-midnight
 * hours, "open now" and the closed status across midnight, occupancy labels and
 * hourly data for the local day, "today" and events_today in different time
 * zones around UTC midnight and across DST changes.
 */
import type { Express } from 'express';
import { PARTNER_PREFIX as P } from '../../server/contract/identity';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { CHICAGO, fixtures, type Fixtures } from '../support/fixtures';
import { get } from '../support/openapi';
import { buildApp } from '../support/partner-app';

describe('time zones, after-midnight hours and open now', () => {
  let db: TestDatabase;
  let f: Fixtures;
  let app: Express;
  let chicago: number;
  let newYork: number;
  let lateBar: number; // Chicago, Friday 20:00-02:00 and Sunday 22:00-03:00
  let nyBar: number;

  beforeAll(async () => {
    db = await createTestDatabase();
    f = fixtures(db.owner);
    chicago = await f.city(CHICAGO);
    newYork = await f.city({
      name: 'New York',
      state: 'NY',
      time_zone: 'America/New_York',
      latitude: 40.71,
      longitude: -74.0,
    });
    lateBar = await f.bar(chicago, { name: 'Night Owl' });
    await f.hours(lateBar, [
      [5, '20:00', '02:00'],
      [7, '22:00', '03:00'],
      [3, '11:00', '14:00'],
      [3, '17:00', '23:30'],
    ]);
    // the profile encodes day and hour: 10 * ISO day + hour % 10
    await f.occupancy(lateBar, 60, (day, hour) => day * 10 + (hour % 10));
    nyBar = await f.bar(newYork, { name: 'Empire Taps' });
    await f.alwaysOpen(nyBar);
    ({ app } = buildApp(db.partnerPool()));
  });
  afterAll(() => db.drop());

  const isOpen = async (barId: number, nowUtc: string) => {
    const { rows } = await db.owner.query<{ open: boolean }>(
      "select test_ref.bar_is_open($1, $2::timestamptz at time zone 'America/Chicago') as open",
      [barId, nowUtc],
    );
    return rows[0]!.open;
  };
  const occupancyAt = async (barId: number, nowUtc: string) => {
    const { rows } = await db.owner.query<{
      body: {
        bar: {
          occupancy: { current_intensity: number; status: string; hourly_data: { hour: number; intensity: number }[] };
        };
      };
    }>('select api.bar($1, $2)::json as body', [String(barId), nowUtc]);
    return rows[0]!.body.bar.occupancy;
  };

  test('a bar open all day (00:00-23:59 plus 23:59-00:00) is open in the last minute before midnight', async () => {
    // 23:59:30 in New York on Saturday 21 November 2026 (EST = UTC-5)
    const { rows } = await db.owner.query<{ open: boolean }>(
      "select test_ref.bar_is_open($1, '2026-11-22T04:59:30Z'::timestamptz at time zone 'America/New_York') as open",
      [nyBar],
    );
    expect(rows[0]!.open).toBe(true);
    const { rows: alone } = await db.owner.query<{ open: boolean }>(
      "select test_ref.bar_is_open($1, '2026-11-22T04:59:30Z'::timestamptz at time zone 'America/New_York') as open",
      [lateBar],
    );
    expect(alone[0]!.open).toBe(false);
  });

  describe('an after-midnight slot belongs to the day it opens (Chicago, CST = UTC-6 in late November)', () => {
    test.each([
      ['Friday 19:59', '2026-11-21T01:59:00Z', false],
      ['Friday 20:00', '2026-11-21T02:00:00Z', true],
      ['Friday 23:59', '2026-11-21T05:59:00Z', true],
      ['Saturday 00:00', '2026-11-21T06:00:00Z', true],
      ['Saturday 01:59', '2026-11-21T07:59:00Z', true],
      ['Saturday 02:00', '2026-11-21T08:00:00Z', false],
      ['Saturday 21:00 (no Saturday slot)', '2026-11-22T03:00:00Z', false],
      ['Sunday 01:00 (Saturday has no slot to spill over)', '2026-11-22T07:00:00Z', false],
      ['Sunday 22:00', '2026-11-23T04:00:00Z', true],
      ['Monday 02:59 (Sunday spills over the week boundary)', '2026-11-23T08:59:00Z', true],
      ['Monday 03:00', '2026-11-23T09:00:00Z', false],
      ['Wednesday 14:00 (between two slots)', '2026-11-25T20:00:00Z', false],
      ['Wednesday 23:29', '2026-11-26T05:29:00Z', true],
      ['Thursday 00:10 (a same-day slot does not spill)', '2026-11-26T06:10:00Z', false],
    ])('%s local: open = %s', async (_label, now, open) => {
      expect(await isOpen(lateBar, now)).toBe(open);
      const occupancy = await occupancyAt(lateBar, now);
      expect(occupancy.status).toBe(open ? 'busy' : 'closed');
      expect(occupancy.current_intensity).toBe(open ? 60 : 0);
    });

    test('hourly_data is the profile of the current local day (Saturday after a Friday night), 24 hours ascending', async () => {
      const occupancy = await occupancyAt(lateBar, '2026-11-21T07:00:00Z'); // Saturday 01:00 local, 07:00 UTC
      expect(occupancy.hourly_data).toHaveLength(24);
      expect(occupancy.hourly_data.map((h) => h.hour)).toEqual(Array.from({ length: 24 }, (_, i) => i));
      expect(occupancy.hourly_data.map((h) => h.intensity)).toEqual(
        Array.from({ length: 24 }, (_, h) => 60 + (h % 10)),
      );
    });

    test('the hours object lists all seven days, [] for closed days, after-midnight close as written', async () => {
      const res = await get(app, `${P}/bars/${lateBar}`);
      expect(res.body.bar.hours).toEqual({
        monday: [],
        tuesday: [],
        wednesday: [
          { open: '11:00', close: '14:00' },
          { open: '17:00', close: '23:30' },
        ],
        thursday: [],
        friday: [{ open: '20:00', close: '02:00' }],
        saturday: [],
        sunday: [{ open: '22:00', close: '03:00' }],
      });
    });
  });

  describe('occupancy status labels', () => {
    test.each([
      [0, 'quiet'],
      [24, 'quiet'],
      [25, 'moderate'],
      [49, 'moderate'],
      [50, 'busy'],
      [74, 'busy'],
      [75, 'very_busy'],
      [100, 'very_busy'],
    ])('intensity %i while open is %s', async (intensity, status) => {
      const { rows } = await db.owner.query(
        'select private.occupancy_status($1, true) as open, private.occupancy_status($1, false) as closed',
        [intensity],
      );
      expect(rows[0]).toEqual({ open: status, closed: 'closed' });
    });

    test('an open bar without occupancy data has null intensity and status; hourly intensities are null', async () => {
      const bare = await f.bar(chicago, { name: 'No Data Bar' });
      await f.alwaysOpen(bare);
      const occupancy = await occupancyAt(bare, '2026-11-21T18:00:00Z');
      expect(occupancy.current_intensity).toBeNull();
      expect(occupancy.status).toBeNull();
      expect(occupancy.hourly_data.every((h) => h.intensity === null)).toBe(true);
    });
  });

  describe('"today" is the city\'s local day', () => {
    let chicagoEvents: Record<string, number>;
    let nyEvents: Record<string, number>;

    beforeAll(async () => {
      // Around UTC midnight of Nov 21/22: Chicago (UTC-6) and New York (UTC-5) see different local days.
      chicagoEvents = {
        chicagoFri: await f.event(lateBar, {
          title: 'Fri late local',
          start_at: '2026-11-21T05:30:00Z',
          end_at: '2026-11-21T07:00:00Z',
        }), // Fri 23:30
        chicagoSat: await f.event(lateBar, {
          title: 'Sat early local',
          start_at: '2026-11-21T06:30:00Z',
          end_at: '2026-11-21T08:00:00Z',
        }), // Sat 00:30
        chicagoSatLate: await f.event(lateBar, {
          title: 'Sat 23:59 local',
          start_at: '2026-11-22T05:59:00Z',
          end_at: '2026-11-22T07:00:00Z',
        }), // Sat 23:59
        chicagoSun: await f.event(lateBar, {
          title: 'Sun 00:00 local',
          start_at: '2026-11-22T06:00:00Z',
          end_at: '2026-11-22T07:00:00Z',
        }), // Sun 00:00
      };
      nyEvents = {
        nySat: await f.event(nyBar, {
          title: 'NY Sat 23:30',
          start_at: '2026-11-22T04:30:00Z',
          end_at: '2026-11-22T06:00:00Z',
        }),
        nySun: await f.event(nyBar, {
          title: 'NY Sun 00:30',
          start_at: '2026-11-22T05:30:00Z',
          end_at: '2026-11-22T07:00:00Z',
        }),
      };
    });

    const eventsToday = async (state: string, city: string, now: string) => {
      const { rows } = await db.owner.query<{ body: { events_today: { id: string; name: string }[] } }>(
        'select api.bars_by_city($1, $2, p_now => $3) as body',
        [state, city, now],
      );
      return rows[0]!.body.events_today.map((e) => e.name);
    };

    test('at 2026-11-22T05:45Z it is still Saturday in Chicago but already Sunday in New York', async () => {
      expect(await eventsToday('IL', 'Chicago', '2026-11-22T05:45:00Z')).toEqual([
        'Sat early local',
        'Sat 23:59 local',
      ]);
      expect(await eventsToday('NY', 'New York', '2026-11-22T05:45:00Z')).toEqual(['NY Sun 00:30']);
    });

    test('at 2026-11-22T04:45Z it is Saturday in both', async () => {
      expect(await eventsToday('NY', 'New York', '2026-11-22T04:45:00Z')).toEqual(['NY Sat 23:30']);
    });

    test("at 2026-11-22T06:00Z Chicago's Sunday begins", async () => {
      expect(await eventsToday('IL', 'Chicago', '2026-11-22T06:00:00Z')).toEqual(['Sun 00:00 local']);
    });

    test('events default window starts at local today: a date-only start_date is the local midnight', async () => {
      const { rows } = await db.owner.query<{ body: { events: { title: string }[] } }>(
        "select api.events('IL', 'Chicago', p_start_date => '2026-11-21', p_end_date => '2026-11-21', p_now => '2026-11-20T12:00:00Z') as body",
      );
      expect(rows[0]!.body.events.map((e) => e.title)).toEqual(['Sat early local', 'Sat 23:59 local']);
      const dflt = await db.owner.query<{ body: { events: { title: string }[] } }>(
        "select api.events('IL', 'Chicago', p_now => '2026-11-21T07:00:00Z') as body",
      ); // Saturday 01:00 local
      expect(dflt.rows[0]!.body.events.map((e) => e.title)).toEqual([
        'Sat early local',
        'Sat 23:59 local',
        'Sun 00:00 local',
      ]);
    });

    test('through the API (real clock), every events_today item has the short form with its bar', async () => {
      const res = await get(app, `${P}/bars_by_city/IL/Chicago`);
      expect(res.status).toBe(200);
      expect(Object.keys(chicagoEvents)).toHaveLength(4);
      expect(nyEvents.nySat).toBeGreaterThan(0);
    });
  });

  describe('across DST changes (America/Chicago)', () => {
    let dstBar: number;
    beforeAll(async () => {
      const springfield = await f.city({ name: 'Springfield', state: 'IL', time_zone: 'America/Chicago' });
      dstBar = await f.bar(springfield, { name: 'Clock Shift' });
      // Spring forward: 2026-03-08 is 23 hours long (06:00Z .. 05:00Z next day).
      await f.event(dstBar, {
        title: 'spring 23:30 local',
        start_at: '2026-03-09T04:30:00Z',
        end_at: '2026-03-09T05:00:00Z',
      });
      await f.event(dstBar, {
        title: 'spring next day 00:30 local',
        start_at: '2026-03-09T05:30:00Z',
        end_at: '2026-03-09T06:00:00Z',
      });
      await f.event(dstBar, {
        title: 'spring 00:15 local',
        start_at: '2026-03-08T06:15:00Z',
        end_at: '2026-03-08T07:00:00Z',
      });
      // Fall back: 2026-11-01 is 25 hours long (05:00Z .. 06:00Z next day).
      await f.event(dstBar, {
        title: 'fall 23:30 local',
        start_at: '2026-11-02T05:30:00Z',
        end_at: '2026-11-02T06:00:00Z',
      });
      await f.event(dstBar, {
        title: 'fall 00:30 local',
        start_at: '2026-11-01T05:30:00Z',
        end_at: '2026-11-01T06:00:00Z',
      });
      await f.event(dstBar, {
        title: 'fall previous day 23:30 local',
        start_at: '2026-11-01T04:30:00Z',
        end_at: '2026-11-01T05:00:00Z',
      });
      await f.hours(dstBar, [[7, '01:00', '04:00']]); // Sunday 01:00-04:00 (2026-03-08 and 2026-11-01 are Sundays)
    });

    const today = async (now: string) => {
      const { rows } = await db.owner.query<{ body: { events_today: { name: string }[] } }>(
        "select api.bars_by_city('il', 'springfield', p_now => $1) as body",
        [now],
      );
      return rows[0]!.body.events_today.map((e) => e.name);
    };

    test('spring forward: the 23-hour day', async () => {
      expect(await today('2026-03-08T18:00:00Z')).toEqual(['spring 00:15 local', 'spring 23:30 local']);
    });

    test('fall back: the 25-hour day', async () => {
      expect(await today('2026-11-01T18:00:00Z')).toEqual(['fall 00:30 local', 'fall 23:30 local']);
    });

    test('open now follows local wall-clock time on both sides of the change', async () => {
      expect(await isOpen(dstBar, '2026-03-08T08:30:00Z')).toBe(true); // 03:30 CDT (02:00-03:00 does not exist)
      expect(await isOpen(dstBar, '2026-03-08T09:00:00Z')).toBe(false); // 04:00 CDT
      expect(await isOpen(dstBar, '2026-11-01T09:30:00Z')).toBe(true); // 03:30 CST
      expect(await isOpen(dstBar, '2026-11-01T10:00:00Z')).toBe(false); // 04:00 CST
    });

    test('a date-only end_date includes the whole (25-hour) local day', async () => {
      const { rows } = await db.owner.query<{
        body: { events: { title: string }[]; pagination: { total_count: number } };
      }>(
        "select api.events('IL', 'Springfield', p_start_date => '2026-11-01', p_end_date => '2026-11-01', p_now => '2026-10-01T00:00:00Z') as body",
      );
      expect(rows[0]!.body.events.map((e) => e.title)).toEqual(['fall 00:30 local', 'fall 23:30 local']);
    });
  });
});
