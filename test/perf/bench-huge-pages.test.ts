/** The bench header's huge pages of the machine (bench/environment.ts machineHugePages), from /proc/meminfo text. */
import { machineHugePages } from '../../bench/environment';

const meminfo = (total: number, free: number) =>
  [
    'MemTotal:       24576000 kB',
    'AnonHugePages:         0 kB',
    `HugePages_Total:    ${total}`,
    `HugePages_Free:     ${free}`,
    'HugePages_Rsvd:        0',
    'Hugepagesize:       2048 kB',
  ].join('\n');

describe('bench machineHugePages', () => {
  test('reserved pages, their size and how many are in use', () => {
    expect(machineHugePages(meminfo(3200, 74))).toBe('3,200 of 2048 kB, 3,126 in use');
    expect(machineHugePages(meminfo(3200, 3200))).toBe('3,200 of 2048 kB, 0 in use');
  });

  test('none reserved, and text without the fields', () => {
    expect(machineHugePages(meminfo(0, 0))).toBe('none reserved');
    expect(machineHugePages('MemTotal: 1 kB\nAnonHugePages: 0 kB')).toBeUndefined();
  });

  test('this machine: a reading or undefined, never a throw', () => {
    const here = machineHugePages();
    expect(here === undefined || /^(none reserved|[\d,]+ of \d+ kB, [\d,]+ in use)$/.test(here)).toBe(true);
  });
});
