/**
 * The V8 flags the server runs with: `npm start` (package.json), the Dockerfile's CMD and the bench's
 * full server pass exactly these before `dist/server/main.js` (test/unit/node-flags.test.ts checks
 * that the three agree). NODE_OPTIONS cannot carry them (node refuses V8 flags there).
 *
 * `--no-allocation-site-pretenuring`: V8 allocates an allocation site's objects straight in the old
 * generation once most of them have survived a scavenge. A served request's objects live across its
 * Redis and PostgreSQL round trips, so V8 learns to allocate requests' objects old; they then die in
 * the old generation (more mark-compacts) and keep the young objects they point to alive through
 * every scavenge until one runs. Off: `bars/:id` paced at 1,500 req/s, p99 32.4 → 24.5 ms (medians of
 * 7 ABBA pairs of 3 runs, 6 pairs lower), p90 lower in 7 of 7, mark-compacts 15–17 → 10–11 a leg;
 * max req/s, CPU per radius or `search` answer and the heap unchanged (machine AU, 2026-12-07,
 * docs/performance/2026-12-07-v1.3.md). A refused request's 429 was 30 % cheaper with it (machine Y).
 */
export const SERVER_NODE_FLAGS: readonly string[] = ['--no-allocation-site-pretenuring'];
