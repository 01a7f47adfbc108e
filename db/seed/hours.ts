/**
 * Opening-hours templates and the nightlife-shaped weekly occupancy profiles
 * that follow from them. Bars draw one template and one profile variant in
 * SQL; building the few hundred combinations here keeps the 168-value arrays
 * out of the per-bar work.
 */
import type { HoursKind } from './vocabulary';

/** Whole hours; closes <= opens closes after midnight (00:00 = at midnight). day: ISO 1 = Monday .. 7 = Sunday. */
export interface Slot {
  day: number;
  opens: number;
  closes: number;
}

export interface HoursTemplate {
  id: number;
  kind: HoursKind;
  slots: Slot[];
  /** Still open at 02:00 after Saturday night (the late-night group). */
  late: boolean;
}

const week = [1, 2, 3, 4, 5, 6, 7];

/** The Sun-Thu / Fri-Sat closing pairs: weekends always close after midnight. */
function weekendClose(weeknight: number): number {
  return weeknight === 23 ? 1 : Math.min(weeknight + 1, 3);
}

export function hoursTemplates(): HoursTemplate[] {
  const templates: Omit<HoursTemplate, 'id' | 'late'>[] = [];
  const closedDaySets = [[], [1], [1, 2], [7]];

  for (const opens of [11, 12, 15, 16, 17]) {
    for (const weeknight of [23, 0, 1, 2]) {
      for (const closed of closedDaySets) {
        for (const split of opens <= 12 ? [false, true] : [false]) {
          const slots: Slot[] = [];
          for (const day of week) {
            if (closed.includes(day)) continue;
            const weekend = day === 5 || day === 6;
            const close = weekend ? weekendClose(weeknight) : day === 7 ? (weeknight === 23 ? 23 : 0) : weeknight;
            if (split && !weekend && day !== 7) {
              // Lunch service, a break, then the evening: two slots a day.
              slots.push({ day, opens, closes: 14 }, { day, opens: 16, closes: close });
            } else {
              slots.push({ day, opens: day === 7 && opens <= 12 ? 10 : opens, closes: close });
            }
          }
          templates.push({ kind: 'regular', slots });
        }
      }
    }
  }

  for (const opens of [21, 22]) {
    for (const close of [2, 3, 4]) {
      for (const days of [
        [4, 5, 6],
        [3, 4, 5, 6],
        [5, 6],
      ]) {
        templates.push({
          kind: 'club',
          slots: days.map((day) => ({ day, opens, closes: day === 3 || day === 4 ? 2 : close })),
        });
      }
    }
  }

  // Brewpubs, beer gardens, sports bars: from lunch (11:00 or 12:00; weekends 11:00) into the evening.
  for (const opens of [11, 12]) {
    for (const weekend of [23, 0]) {
      for (const closed of [[1], [1, 2], []]) {
        templates.push({
          kind: 'daytime',
          slots: week
            .filter((d) => !closed.includes(d))
            .map((day) => ({
              day,
              opens: day >= 6 ? 11 : opens,
              closes: day === 5 || day === 6 ? weekend : day === 7 ? 20 : 22,
            })),
        });
      }
    }
  }

  // Hotel bars and the bars that serve the night shift: open from 06:00-08:00 every day until
  // midnight or late (a 04:00 close is New York's legal limit).
  for (const opens of [6, 7, 8]) {
    for (const close of [0, 2, 4]) {
      templates.push({ kind: 'early', slots: week.map((day) => ({ day, opens, closes: close })) });
    }
  }

  // Around the clock (casino and airport-hotel bars): two slots a day, since a slot may not open and
  // close at the same minute.
  templates.push({
    kind: 'allday',
    slots: week.flatMap((day) => [
      { day, opens: 0, closes: 12 },
      { day, opens: 12, closes: 0 },
    ]),
  });

  return templates.map((t, i) => ({ ...t, id: i + 1, late: isOpen(t, SUNDAY_2AM) }));
}

/** Hour-of-week index of Sunday 02:00: a bar still open then belongs to the late-night group. */
const SUNDAY_2AM = 6 * 24 + 2;

/** Whether the template has the bar open during hour-of-week `index` (0 = Monday 00:00). */
export function isOpen(template: Pick<HoursTemplate, 'slots'>, index: number): boolean {
  const day = Math.floor(index / 24) + 1;
  const hour = index % 24;
  const previous = day === 1 ? 7 : day - 1;
  return template.slots.some(
    (s) =>
      (s.day === day && hour >= s.opens && (s.closes > s.opens ? hour < s.closes : true)) ||
      (s.day === previous && s.closes <= s.opens && hour < s.closes),
  );
}

export interface ProfileVariant {
  peak: number;
  width: number;
}

/** Crowd peaks from early evening to past midnight. */
export const profileVariants: ProfileVariant[] = [
  { peak: 20.5, width: 2.5 },
  { peak: 22, width: 2.5 },
  { peak: 23, width: 2 },
  { peak: 24.5, width: 1.8 },
];

// How busy a night is, by the day the evening starts on (Monday first).
const nightFactor = [0.5, 0.55, 0.65, 0.8, 1, 1, 0.6];

/**
 * 168 intensities (Monday 00:00 local first): 0 while closed, otherwise a
 * quiet afternoon rising to a late-evening peak, busiest Friday and Saturday,
 * scaled so the week's busiest hour is 100 and an open hour is at least 3.
 */
export function weeklyProfile(template: HoursTemplate, variant: ProfileVariant): number[] {
  const raw = Array.from({ length: 168 }, (_, index) => {
    if (!isOpen(template, index)) return 0;
    const hour = index % 24;
    // Hours before 6 a.m. belong to the previous evening.
    const evening = hour < 6 ? (Math.floor(index / 24) + 6) % 7 : Math.floor(index / 24);
    const t = hour < 6 ? hour + 24 : hour;
    const crowd =
      0.12 + 0.88 * Math.exp(-((t - variant.peak) ** 2) / (2 * variant.width ** 2)) + (t === 12 || t === 13 ? 0.12 : 0);
    return nightFactor[evening]! * crowd;
  });
  const max = Math.max(...raw);
  return raw.map((v) => (v === 0 ? 0 : Math.max(3, Math.round((100 * v) / max))));
}
