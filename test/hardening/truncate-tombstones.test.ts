/**
 * Issue 22: TRUNCATE of a partner-visible table (bars, events) writes export
 * tombstones like DELETE does, so an incremental export (updated_since) tells
 * its consumer to drop what is gone instead of silently keeping it.
 */
import { createTestDatabase, type TestDatabase } from '../support/db';
import { fixtures } from '../support/fixtures';

describe('TRUNCATE of bars and events is recorded for exports', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  const tombstones = async () =>
    (await db.owner.query<{ kind: string; id: number }>('select kind, id from private.tombstones order by kind, id'))
      .rows;

  test('truncate events: one tombstone per event', async () => {
    const f = fixtures(db.owner);
    const city = await f.city({ name: 'Austin', state: 'TX', time_zone: 'America/Chicago' });
    const bar = await f.bar(city, { name: 'The Tap' });
    const times = { start_at: '2030-01-01T20:00:00Z', end_at: '2030-01-01T23:00:00Z' };
    const e1 = await f.event(bar, { title: 'Jazz', ...times });
    const e2 = await f.event(bar, { title: 'Blues', ...times });
    await db.owner.query('truncate private.events');
    expect(await tombstones()).toEqual([
      { kind: 'event', id: e1 },
      { kind: 'event', id: e2 },
    ]);
  });

  test('truncate bars cascade: the bars and their events, reported by an updated_since export', async () => {
    const f = fixtures(db.owner);
    const city = await f.city({ name: 'Denver', state: 'CO', time_zone: 'America/Denver' });
    const b1 = await f.bar(city, { name: 'One' });
    const b2 = await f.bar(city, { name: 'Two' });
    const ev = await f.event(b2, { title: 'Quiz', start_at: '2030-01-01T20:00:00Z', end_at: '2030-01-01T22:00:00Z' });
    const { rows: before } = await db.owner.query<{ t: Date }>('select now() as t');
    await db.owner.query('truncate private.bars cascade');
    const stones = await tombstones();
    expect(stones).toEqual(
      expect.arrayContaining([
        { kind: 'bar', id: b1 },
        { kind: 'bar', id: b2 },
        { kind: 'event', id: ev },
      ]),
    );
    const client = await db.owner.connect();
    let lines: string[];
    try {
      await client.query('begin');
      await client.query("select api.export_bars('c', null, null, $1::timestamptz)", [before[0]!.t]);
      lines = (await client.query<Record<string, string>>('fetch all from c')).rows.map((r) => Object.values(r)[0]!);
      await client.query('commit');
    } finally {
      client.release();
    }
    const deleted = lines.filter((l) => l.includes('"type":"deleted"'));
    expect(deleted).toEqual(
      expect.arrayContaining([expect.stringContaining(`"id":"${b1}"`), expect.stringContaining(`"id":"${b2}"`)]),
    );
  });
});
