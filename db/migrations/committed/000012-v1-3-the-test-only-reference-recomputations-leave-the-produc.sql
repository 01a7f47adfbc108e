--! Previous: sha1:e8a437336cfccdaf8915a8179a0495b2054d45df
--! Hash: sha1:e23e7dad94631aad0744b318c0d60f83023afefc
--! Message: v1.3: the test-only reference recomputations leave the production schema

--! split: 49-reference-recomputations-out.sql
-- The per-bar recomputations of migration 000002 (bar_hours_json, bar_is_open, ...) are test-only oracles
-- of the derived-table tests: no endpoint calls them. They leave the production schema; the tests create
-- them in test_ref (test/support/reference-recomputations.sql). Idempotent.
drop function if exists private.bar_occupancy_json(bigint, timestamp, boolean);
drop function if exists private.bar_is_open(bigint, timestamp);
drop function if exists private.bar_hours_json(bigint);
drop function if exists private.bar_categories_json(bigint);
drop function if exists private.bar_primary_category_json(bigint);
drop function if exists private.bar_photos_json(bigint);
