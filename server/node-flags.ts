/**
 * The V8 flags the server runs with: `npm start` (package.json), the Dockerfile's CMD, the bench's
 * full server and bench/instructions-per-request.sh pass exactly these before `dist/server/main.js`
 * (test/perf/server-node-flags.test.ts checks that they agree). NODE_OPTIONS cannot carry them (node refuses V8 flags there).
 *
 * `--no-allocation-site-pretenuring`: V8 allocates an allocation site's objects straight in the old
 * generation once most of them have survived a scavenge. A served request's objects live across its
 * Redis and PostgreSQL round trips, so V8 learns to allocate requests' objects old; they then die in
 * the old generation (more mark-compacts) and keep the young objects they point to alive through
 * every scavenge until one runs. Off: `bars/:id` paced at 1,500 req/s, p99 32.4 → 24.5 ms (medians of
 * 13 alternating pairs of 3-run legs, 9 pairs lower), p90 lower in 12 of 13, mark-compacts 15–17 → 10–11
 * a leg, the heap the same; max req/s and CPU per answer within the runs' spread (machine AU,
 * 2026-12-07, docs/performance/2026-12-07-v1.3.md). A refused request's 429 was 30 % cheaper (machine Y).
 */
export const SERVER_NODE_FLAGS: readonly string[] = ['--no-allocation-site-pretenuring'];
