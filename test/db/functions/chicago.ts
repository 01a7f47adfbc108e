/** The city families' fixture (city.test.ts, city-groups.test.ts): Chicago, its clock pinned to a Monday night. */
import type { Tx } from './sql';

export interface Page {
  current_page: number;
  total_pages: number;
  total_count: number;
  per_page: number;
}
export interface Named {
  id: string;
  name: string;
}
// Chicago: UTC-6 in late November. 2026-11-23 is a Monday.
export const MONDAY_0100_CHICAGO = '2026-11-23T07:00:00Z';

/** Chicago, and a bar maker there: open all week (unless `open` is false) at an intensity. */
export async function chicago(tx: Tx) {
  const city = await tx.fx.city({ name: 'Chicago', state: 'IL', time_zone: 'America/Chicago' });
  const bar = async (name: string, intensity: number, open = true) => {
    const id = await tx.fx.bar(city, { name });
    if (open) await tx.fx.alwaysOpen(id);
    await tx.fx.occupancy(id, intensity);
    return String(id);
  };
  return { city, bar };
}
