/**
 * Hand-built bar data for API tests, inserted into private.* as the owner.
 * Every helper returns the new row's id; anything not given gets a plain default.
 */
import type { Pool } from '../../server/db/pools';

type Row = Record<string, unknown>;

async function insert(pool: Pool, table: string, row: Row): Promise<number> {
  const columns = Object.keys(row);
  const { rows } = await pool.query<{ id: number }>(
    `insert into private.${table} (${columns.join(', ')}) values (${columns.map((_, i) => `$${i + 1}`).join(', ')}) returning id`,
    Object.values(row),
  );
  return rows[0]!.id;
}

export interface CityInput {
  name: string;
  state: string;
  time_zone: string;
  latitude?: number;
  longitude?: number;
  population?: number;
}
/** Chicago, where the SQL and time tests put their bars: UTC-6 in late November. */
export const CHICAGO: CityInput = {
  name: 'Chicago',
  state: 'IL',
  time_zone: 'America/Chicago',
  latitude: 41.88,
  longitude: -87.63,
};
export interface BarInput {
  name: string;
  latitude?: number;
  longitude?: number;
  address?: string;
  zip_code?: string;
  phone?: string;
  website?: string;
  google_rating?: number;
  google_ratings_total?: number;
  price_level?: number;
  description?: string;
  profile_picture_url?: string;
}
export interface EventInput {
  title: string;
  start_at: string;
  end_at: string;
  classification?: string;
  description?: string;
  created_at?: string;
}

export function fixtures(pool: Pool) {
  let users = 0;
  const self = {
    city: (c: CityInput) => insert(pool, 'cities', { latitude: 30, longitude: -97, ...c }),

    async bar(cityId: number, b: BarInput): Promise<number> {
      const city = await pool.query<{ latitude: number; longitude: number }>(
        'select latitude, longitude from private.cities where id = $1',
        [cityId],
      );
      return insert(pool, 'bars', {
        city_id: cityId,
        address: '1 Main St',
        latitude: city.rows[0]!.latitude,
        longitude: city.rows[0]!.longitude,
        ...b,
      });
    },

    /** [ISO day 1-7, 'HH:MM', 'HH:MM'] slots. */
    async hours(barId: number, slots: [number, string, string][]): Promise<void> {
      for (const [day, opens, closes] of slots) {
        await pool.query(
          'insert into private.opening_hours (bar_id, day_of_week, opens, closes) values ($1, $2, $3, $4)',
          [barId, day, opens, closes],
        );
      }
    },

    /** Open every day, all day (00:00-23:59 plus the last minute after midnight). */
    alwaysOpen: (barId: number) =>
      self.hours(
        barId,
        [1, 2, 3, 4, 5, 6, 7].flatMap(
          (d) =>
            [
              [d, '00:00', '23:59'],
              [d, '23:59', '00:00'],
            ] as [number, string, string][],
        ),
      ),

    async occupancy(
      barId: number,
      current: number,
      profile: (dayOfWeek: number, hour: number) => number = () => 10,
    ): Promise<void> {
      const weekly = Array.from({ length: 168 }, (_, i) => profile(Math.floor(i / 24) + 1, i % 24));
      await pool.query(
        'insert into private.occupancy (bar_id, current_intensity, weekly_profile) values ($1, $2, $3)',
        [barId, current, weekly],
      );
    },

    category: (name: string, slug: string) => insert(pool, 'categories', { name, slug }),

    async barCategory(barId: number, categoryId: number, primary = false, position = 0): Promise<void> {
      await pool.query(
        'insert into private.bar_categories (bar_id, category_id, is_primary, position) values ($1, $2, $3, $4)',
        [barId, categoryId, primary, position],
      );
    },

    photo: (barId: number, url: string, position = 0) => insert(pool, 'photos', { bar_id: barId, url, position }),

    async group(cityId: number, slug: string, barIds: number[]): Promise<number> {
      const id = await insert(pool, 'groups', { city_id: cityId, slug, name: slug });
      for (const barId of barIds)
        await pool.query('insert into private.bar_groups (group_id, bar_id) values ($1, $2)', [id, barId]);
      return id;
    },

    async event(barId: number, e: EventInput): Promise<number> {
      const { rows } = await pool.query<{ id: number }>(
        `insert into private.events (bar_id, city_id, title, classification, start_at, end_at, description, created_at)
         select b.id, b.city_id, $2, $3, $4, $5, $6, coalesce($7::timestamptz, now()) from private.bars b where b.id = $1 returning id`,
        [
          barId,
          e.title,
          e.classification ?? 'live_music',
          e.start_at,
          e.end_at,
          e.description ?? null,
          e.created_at ?? null,
        ],
      );
      return rows[0]!.id;
    },

    user: (username = `user_${++users}`) => insert(pool, 'users', { username }),

    async post(
      barId: number,
      userId: number,
      content: string,
      createdAt: string,
      media: string[] = [],
    ): Promise<number> {
      const { rows } = await pool.query<{ id: number }>(
        `insert into private.posts (bar_id, city_id, user_id, content, created_at)
         select b.id, b.city_id, $2, $3, $4 from private.bars b where b.id = $1 returning id`,
        [barId, userId, content, createdAt],
      );
      const id = rows[0]!.id;
      for (const [i, url] of media.entries()) await insert(pool, 'post_media', { post_id: id, url, position: i });
      return id;
    },
  };
  return self;
}

export type Fixtures = ReturnType<typeof fixtures>;
