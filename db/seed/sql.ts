/**
 * The SQL of the demo generator. Everything is set-based: each table is one
 * INSERT ... SELECT over generate_series, and every "random" choice is a hash
 * of (entity number, attribute salt, seed) through the pg_temp helpers, so the
 * same seed and scale give the same rows in any plan order. Ids are assigned
 * here too (OVERRIDING SYSTEM VALUE), never drawn from sequences: a rolled-back
 * earlier attempt cannot shift them.
 *
 * Id layout: bars 1..N; events (bar-1)*8+k; photos (bar-1)*8+k;
 * posts (bar-1)*32+k; post media post*4+m.
 */

/** Session helpers. `seed` is an integer and `anchor` an ISO timestamp, both checked by the caller. */
export function helperFunctions(seed: number, anchorIso: string, users: number): string[] {
  const fn = (signature: string, returns: string, body: string) =>
    `create function pg_temp.${signature} returns ${returns} language sql immutable parallel safe as $$ select ${body} $$`;
  return [
    // Uniform in [0, 1): 53 bits of a seeded 64-bit hash. Inlined, so the inner hash of constants folds away.
    fn(
      'rnd(k bigint, salt integer)',
      'double precision',
      `(hashint8extended(k, hashint8extended(salt, ${seed}::bigint)) & 9007199254740991)::float8 / 9007199254740992`,
    ),
    fn('pick(k bigint, salt integer, n integer)', 'integer', 'floor(pg_temp.rnd(k, salt) * n)::integer'),
    // Standard normal (Box-Muller); uses salts salt and salt + 1.
    fn(
      'gauss(k bigint, salt integer)',
      'double precision',
      'sqrt(-2 * ln(1 - pg_temp.rnd(k, salt))) * cos(2 * pi() * pg_temp.rnd(k, salt + 1))',
    ),
    fn('word(words text[], k bigint, salt integer)', 'text', 'words[1 + pg_temp.pick(k, salt, cardinality(words))]'),
    fn('anchor()', 'timestamptz', `'${anchorIso}'::timestamptz`),
    fn('user_count()', 'integer', `${users}`),
  ];
}

/**
 * A word list (or lottery) as a constant function: pg_temp.nouns() returns text[].
 * Inlined into each statement as a constant, an array costs nothing per row, where
 * the same array read from a temp table row would be detoasted on every access.
 * $1 name, $2 JSON array of the values, $3 the array type. Returns the DDL to run.
 */
export const constantFunction = `
  select format('create function pg_temp.%I() returns %s language sql immutable parallel safe as %L',
                $1::text, $3::text,
                format('select %L::%s', (select array_agg(e order by n)
                                         from json_array_elements_text($2::json) with ordinality as x(e, n))::text,
                       $3::text)) as ddl`;

/** Temp tables filled from JSON parameters built in TypeScript ($1). */
export const stagingTables = {
  cities: `
    create temp table seed_cities on commit drop as
    select c.*,
           (c.anchor_local::date) as anchor_date,
           ((extract(isodow from c.anchor_local) - 1) * 24 + extract(hour from c.anchor_local))::integer as now_index,
           least(8, 0.6 + 1.8 * sqrt(c.population / 1e6)) as spread_km,
           least(90, 2 + c.bars / 50) as zip_count,
           200 + pg_temp.pick(c.no, 1, 780) as area_code
    from (
      select j.*, pg_temp.anchor() at time zone j.time_zone as anchor_local
      from json_to_recordset($1::json) as j(no integer, name text, state text, time_zone text, latitude float8,
                                             longitude float8, population integer, bars integer, first_bar bigint,
                                             zip_digit integer)
    ) c`,
  categories: `
    create temp table seed_categories on commit drop as
    select * from json_to_recordset($1::json) as j(no integer, slug text, name text, noun text, price integer,
                                                    name_words text[], templates integer[])`,
  hours: `
    create temp table seed_hours on commit drop as
    select * from json_to_recordset($1::json) as j(template integer, day smallint, opens time, closes time)`,
  templates: `
    create temp table seed_templates on commit drop as
    select * from json_to_recordset($1::json) as j(template integer, late boolean)`,
  profiles: `
    create temp table seed_profiles on commit drop as
    select * from json_to_recordset($1::json) as j(template integer, variant integer, profile smallint[])`,
  kinds: `
    create temp table seed_kinds on commit drop as
    select * from json_to_recordset($1::json) as j(no integer, classification text, titles text[], descriptions text[],
                                                    start_minute integer, start_steps integer, min_minutes integer,
                                                    duration_steps integer)`,
  groups: `
    create temp table seed_groups on commit drop as
    select * from json_to_recordset($1::json) as j(no integer, slug text, name text, min_bars integer, rule text,
                                                    category_nos integer[], size integer)`,
};

export const cities = `
  insert into private.cities (id, name, state, time_zone, latitude, longitude, population)
  overriding system value
  select no, name, state, time_zone, latitude, longitude, population from seed_cities order by no`;

export const categories = `
  insert into private.categories (id, name, slug)
  overriding system value
  select no, name, slug from seed_categories order by no`;

/** Per-bar choices the later phases share (primary and extra categories, hours, profile, child counts). */
export const seedBars = `
  create temp table seed_bars on commit drop as
  select s.no, s.city_no, s.cat1,
         case when s.n_cats >= 2 then (s.cat1 - 1 + s.o1) % s.k + 1 end as cat2,
         case when s.n_cats = 3 then (s.cat1 - 1 + s.o2 + (s.o2 >= s.o1)::integer) % s.k + 1 end as cat3,
         cat.templates[1 + pg_temp.pick(s.no, 105, cardinality(cat.templates))] as template,
         1 + pg_temp.pick(s.no, 106, s.variants) as variant,
         (array[0, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5])[1 + pg_temp.pick(s.no, 107, 14)] as n_photos,
         -- about 3 events and 10 posts a bar; the first 8 bars carry one event of each classification
         case when s.no <= 8 then 1 + pg_temp.pick(s.no, 108, 5) else pg_temp.pick(s.no, 108, 7) end as n_events,
         pg_temp.pick(s.no, 109, 21) as n_posts
  from (
    select b.no, c.no as city_no, k.k, pg_temp.profile_variants() as variants,
           (pg_temp.category_lottery())[1 + pg_temp.pick(b.no, 101, cardinality(pg_temp.category_lottery()))] as cat1,
           (array[1, 1, 2, 2, 3])[1 + pg_temp.pick(b.no, 102, 5)] as n_cats,
           1 + pg_temp.pick(b.no, 103, k.k - 1) as o1,
           1 + pg_temp.pick(b.no, 104, k.k - 2) as o2
    from seed_cities c
    cross join (select count(*)::integer as k from seed_categories) k
    cross join lateral generate_series(c.first_bar, c.first_bar + c.bars - 1) as b(no)
  ) s
  join seed_categories cat on cat.no = s.cat1`;

export const bars = `
  insert into private.bars (id, city_id, name, address, zip_code, latitude, longitude, phone, website, google_rating,
                            google_ratings_total, price_level, description, profile_picture_url, created_at, updated_at)
  overriding system value
  select b.no, b.city_no, n.name,
         format('%s %s %s', floor(exp(pg_temp.rnd(b.no, 150) * 9.2))::integer,
                pg_temp.word(pg_temp.streets(), b.no, 151), pg_temp.word(pg_temp.street_suffixes(), b.no, 152)),
         c.zip_digit::text || lpad(pg_temp.pick(c.no, 2, 100)::text, 2, '0')
           || lpad((1 + pg_temp.pick(b.no, 153, c.zip_count))::text, 2, '0'),
         round((c.latitude + pg_temp.gauss(b.no, 111) * g.sigma / 110.574)::numeric, 6)::float8,
         round((c.longitude + pg_temp.gauss(b.no, 113) * g.sigma / (111.320 * cos(radians(c.latitude))))::numeric, 6)::float8,
         format('(%s) 555-01%s', c.area_code, lpad(pg_temp.pick(b.no, 154, 100)::text, 2, '0')),
         case when pg_temp.rnd(b.no, 155) < 0.85 then 'https://' || sl.slug || '.example.com/' end,
         case when r.total > 0 then round(least(5, greatest(1, 4.2 + 0.45 * pg_temp.gauss(b.no, 121)))::numeric, 1) end,
         r.total,
         least(4, greatest(1, cat.price + (array[-1, 0, 0, 0, 1])[1 + pg_temp.pick(b.no, 123, 5)])),
         format('%s %s in %s with %s and %s. %s', pg_temp.word(pg_temp.vibes(), b.no, 160), cat.noun, c.name,
                (pg_temp.features())[1 + f.f1], (pg_temp.features())[1 + (f.f1 + 1 + pg_temp.pick(b.no, 162, f.n - 1)) % f.n],
                pg_temp.word(pg_temp.closers(), b.no, 163)),
         case when pg_temp.rnd(b.no, 156) < 0.95 then format('https://images.example.com/bars/%s/profile.jpg', b.no) end,
         t.created_at,
         t.created_at + (pg_temp.anchor() - t.created_at) * pg_temp.rnd(b.no, 171)
  from seed_bars b
  join seed_cities c on c.no = b.city_no
  join seed_categories cat on cat.no = b.cat1
  cross join lateral (select case when pg_temp.rnd(b.no, 110) < 0.35 then 0.25 else 1 end * c.spread_km as sigma) g
  cross join lateral (
    select case when pg_temp.rnd(b.no, 120) < 0.02 then 0
                else least(60000, floor(exp(4.8 + 1.3 * pg_temp.gauss(b.no, 124))))::integer end as total
  ) r
  cross join lateral (select cardinality(pg_temp.features()) as n, pg_temp.pick(b.no, 161, cardinality(pg_temp.features())) as f1) f
  cross join lateral (select pg_temp.anchor() - make_interval(days => 30 + pg_temp.pick(b.no, 170, 3000)) as created_at) t
  cross join lateral (
    select pg_temp.pick(b.no, 140, 20) as pattern, pg_temp.word(pg_temp.adjectives(), b.no, 141) as adj,
           pg_temp.pick(b.no, 142, cardinality(pg_temp.nouns())) as noun_i, cardinality(pg_temp.nouns()) as nouns,
           pg_temp.word(cat.name_words, b.no, 144) as kind
  ) p
  cross join lateral (
    select case
      when p.pattern < 6 then format('The %s %s', p.adj, (pg_temp.nouns())[1 + p.noun_i])
      when p.pattern < 11 then format('%s %s %s', p.adj, (pg_temp.nouns())[1 + p.noun_i], p.kind)
      when p.pattern < 13 then format('%s%s & %s', case when pg_temp.rnd(b.no, 145) < 0.5 then 'The ' else '' end,
                                      (pg_temp.nouns())[1 + p.noun_i], (pg_temp.nouns())[1 + (p.noun_i + 1 + pg_temp.pick(b.no, 143, p.nouns - 1)) % p.nouns])
      when p.pattern < 16 then format('%s''s %s', pg_temp.word(pg_temp.people(), b.no, 146), p.kind)
      when p.pattern < 18 then format('The %s %s', (pg_temp.nouns())[1 + p.noun_i], p.kind)
      when p.pattern < 19 then format('%s Street %s', pg_temp.word(pg_temp.streets(), b.no, 147), p.kind)
      else format('%s %s', c.name, p.kind)
    end as name
  ) n
  cross join lateral (
    select trim(both '-' from regexp_replace(
      translate(lower(n.name), 'áàâäãåçéèêëíìîïñóòôöõúùûüýÿāēīōū‘’', 'aaaaaaceeeeiiiinooooouuuuyyaeiou'),
      '[^a-z0-9]+', '-', 'g')) as slug
  ) sl`;

export const barCategories = `
  insert into private.bar_categories (bar_id, category_id, is_primary, position)
  select b.no, x.category_id, x.position = 0, x.position
  from seed_bars b
  cross join lateral (values (b.cat1, 0), (b.cat2, 1), (b.cat3, 2)) as x(category_id, position)
  where x.category_id is not null`;

export const openingHours = `
  insert into private.opening_hours (bar_id, day_of_week, opens, closes)
  select b.no, h.day, h.opens, h.closes
  from seed_bars b join seed_hours h on h.template = b.template`;

// The current intensity follows the profile at the seed time's local hour: 0 exactly when closed.
export const occupancy = `
  insert into private.occupancy (bar_id, current_intensity, updated_at, weekly_profile, hourly_days)
  select b.no,
         case when p.profile[1 + c.now_index] = 0 then 0
              else least(100, greatest(1, p.profile[1 + c.now_index] + pg_temp.pick(b.no, 180, 17) - 8)) end,
         pg_temp.anchor(), p.profile, p.hourly_days
  from seed_bars b
  join seed_cities c on c.no = b.city_no
  join (select s.*, private.hourly_days_json(s.profile) as hourly_days from seed_profiles s offset 0) p
    on p.template = b.template and p.variant = b.variant  -- hourly_days: once per profile (OFFSET 0: not per bar)
`;

export const photos = `
  insert into private.photos (id, bar_id, url, position)
  overriding system value
  select (b.no - 1) * 8 + k, b.no, format('https://images.example.com/bars/%s/photo-%s.jpg', b.no, k), k - 1
  from seed_bars b cross join lateral generate_series(1, b.n_photos) as k`;

// Over the 60 days before and after the anchor, at evening times in the city's local time.
export const events = `
  insert into private.events (id, bar_id, city_id, title, description, classification, start_at, end_at, created_at, updated_at)
  overriding system value
  select x.*, x.created_at from (
  select e.id, b.no, b.city_no,
         replace(replace(pg_temp.word(k.titles, e.id, 202), '{day}', to_char(d.day, 'FMDay')), '{act}',
                 case when k.classification = 'dj' then pg_temp.word(pg_temp.djs(), e.id, 208)
                      else format('The %s %s', pg_temp.word(pg_temp.act_first(), e.id, 209), pg_temp.word(pg_temp.act_second(), e.id, 210)) end),
         pg_temp.word(k.descriptions, e.id, 203),
         k.classification, s.start_at,
         s.start_at + make_interval(mins => k.min_minutes + 30 * pg_temp.pick(e.id, 206, k.duration_steps + 1)),
         least(s.start_at, pg_temp.anchor()) - make_interval(hours => 2 + pg_temp.pick(e.id, 207, 24 * 21))
  from seed_bars b
  join seed_cities c on c.no = b.city_no
  cross join lateral generate_series(1, b.n_events) as n(k)
  cross join lateral (select (b.no - 1) * 8 + n.k as id) e
  join seed_kinds k on k.no = case when b.no <= 8 and n.k = 1 then b.no::integer
                                   else (pg_temp.kind_lottery())[1 + pg_temp.pick(e.id, 201, cardinality(pg_temp.kind_lottery()))] end
  cross join lateral (select c.anchor_date + (pg_temp.pick(e.id, 204, 121) - 60) as day) d
  cross join lateral (
    select (d.day + make_interval(mins => k.start_minute + 30 * pg_temp.pick(e.id, 205, k.start_steps + 1)))
           at time zone c.time_zone as start_at
  ) s
  ) x (id, bar_id, city_id, title, description, classification, start_at, end_at, created_at)
  -- updated_at = created_at: the export's change time, deterministic`;

export const users = `
  insert into private.users (id, username, created_at)
  overriding system value
  select u, format('%s%s%s%s', pg_temp.word(pg_temp.user_first(), u, 301), (array['_', '.', ''])[1 + pg_temp.pick(u, 302, 3)],
                   pg_temp.word(pg_temp.user_second(), u, 303), u),
         pg_temp.anchor() - make_interval(days => 61 + pg_temp.pick(u, 304, 1500), mins => pg_temp.pick(u, 305, 1440))
  from generate_series(1, pg_temp.user_count()) as u`;

// Over the 60 days before the anchor, mostly in the evening local time; a few very active users.
export const posts = `
  insert into private.posts (id, bar_id, city_id, user_id, content, created_at)
  overriding system value
  select p.id, b.no, b.city_no,
         1 + floor(pg_temp.user_count() * pg_temp.rnd(p.id, 310) ^ 2)::integer,
         case pg_temp.pick(p.id, 311, 4)
           when 0 then pg_temp.word(pg_temp.post_remarks(), p.id, 312)
           when 1 then format('%s %s! %s', pg_temp.word(pg_temp.post_openers(), p.id, 313), bar.name, pg_temp.word(pg_temp.post_remarks(), p.id, 312))
           when 2 then format('%s %s.', pg_temp.word(pg_temp.post_openers(), p.id, 313), bar.name)
           else format('%s %s', pg_temp.word(pg_temp.post_remarks(), p.id, 312), pg_temp.word(pg_temp.post_remarks(), p.id, 314))
         end,
         case when t.at > pg_temp.anchor() then t.at - interval '7 days' else t.at end
  from seed_bars b
  join private.bars bar on bar.id = b.no
  join seed_cities c on c.no = b.city_no
  cross join lateral generate_series(1, b.n_posts) as n(k)
  cross join lateral (select (b.no - 1) * 32 + n.k as id) p
  cross join lateral (
    select ((c.anchor_date - pg_temp.pick(p.id, 315, 60))
            + make_interval(hours => (array[11, 12, 13, 14, 15, 16, 17, 17, 18, 18, 19, 19, 19, 20, 20, 20, 21, 21, 21,
                                           22, 22, 22, 23, 23, 0, 1])[1 + pg_temp.pick(p.id, 316, 26)],
                            mins => pg_temp.pick(p.id, 317, 60)))
           at time zone c.time_zone as at
  ) t`;

export const postMedia = `
  insert into private.post_media (id, post_id, url, position)
  overriding system value
  select p.id * 4 + m, p.id, format('https://media.example.com/posts/%s/%s.jpg', p.id, m), m - 1
  from seed_bars b
  cross join lateral generate_series(1, b.n_posts) as n(k)
  cross join lateral (select (b.no - 1) * 32 + n.k as id) p
  cross join lateral generate_series(1, (array[0, 0, 0, 0, 0, 1, 1, 1, 2, 3])[1 + pg_temp.pick(p.id, 320, 10)]) as m`;

export const groups = `
  insert into private.groups (id, city_id, slug, name)
  overriding system value
  select row_number() over (order by c.no, g.no), c.no, g.slug, g.name
  from seed_cities c join seed_groups g on c.bars >= g.min_bars
  where c.no <= 25 -- the most populous cities`;

export const barGroups = `
  insert into private.bar_groups (group_id, bar_id)
  select group_id, bar_id
  from (
    select gr.id as group_id, bar.id as bar_id, g.size,
           row_number() over (partition by gr.id
                              order by case when g.rule in ('near', 'crawl') then d.km else -bar.google_ratings_total end,
                                       bar.id) as place
    from private.groups gr
    join seed_groups g on g.slug = gr.slug
    join seed_cities c on c.no = gr.city_id
    join private.bars bar on bar.city_id = gr.city_id
    join seed_bars b on b.no = bar.id
    join seed_templates t on t.template = b.template
    cross join lateral (
      select sqrt(((bar.latitude - c.latitude) * 110.574) ^ 2
                  + ((bar.longitude - c.longitude) * 111.320 * cos(radians(c.latitude))) ^ 2) as km
    ) d
    where case g.rule
      when 'near' then d.km <= 1.5
      when 'crawl' then b.cat1 = any (g.category_nos)
      when 'late' then t.late
      when 'gems' then bar.google_rating >= 4.5 and bar.google_ratings_total < 300
      else array[b.cat1, b.cat2, b.cat3] && g.category_nos
    end
  ) ranked
  where place <= size`;

export const dropEmptyGroups = `
  delete from private.groups g where not exists (select 1 from private.bar_groups bg where bg.group_id = g.id)`;

export const identityTables = [
  'cities',
  'categories',
  'bars',
  'groups',
  'photos',
  'events',
  'users',
  'posts',
  'post_media',
];

/** Moves each identity past the ids assigned here, so later inserts that use the default cannot collide. */
export function syncIdentity(table: string): string {
  return `select setval(pg_get_serial_sequence('private.${table}', 'id'), coalesce(max(id), 0) + 1, false) from private.${table}`;
}
