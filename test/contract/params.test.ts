import { checkedBarFilters, rules, RADIUS, type FilterInput } from '../../server/contract/params';

const gql = {
  openNow: 'filters.openNow',
  openAt: 'filters.openAt',
  priceLevels: 'filters.priceLevels',
  minRating: 'filters.minRating',
  statuses: 'filters.statuses',
};
const input = (v: Partial<Record<keyof FilterInput, unknown>>): FilterInput => ({
  openNow: () => v.openNow as boolean | undefined,
  openAt: () => v.openAt as string | undefined,
  priceLevels: () => v.priceLevels as string[] | undefined,
  minRating: () => v.minRating as number | undefined,
  statuses: () => v.statuses as string[] | undefined,
});

describe('the contract rules name the caller parameter (no message rewriting)', () => {
  it('checks the filters and names them as given', () => {
    expect(() => checkedBarFilters(input({ openNow: true, openAt: '2026-11-22T21:30:00Z' }), gql)).toThrow(
      'filters.openAt cannot be combined with filters.openNow',
    );
    expect(() => checkedBarFilters(input({ minRating: 6 }), gql)).toThrow(
      'filters.minRating must be a number between 0 and 5',
    );
    expect(() => checkedBarFilters(input({ priceLevels: ['5'] }), gql)).toThrow(
      'filters.priceLevels must be a comma-separated list of 1, 2, 3, 4',
    );
    expect(() => checkedBarFilters(input({ openAt: '2026-11-22' }), gql)).toThrow(/^filters\.openAt must be an ISO/);
    expect(checkedBarFilters(input({ priceLevels: ['2', '2', '1'], statuses: ['busy'] }), gql)).toEqual({
      openNow: null,
      openAt: null,
      priceLevels: [2, 1],
      minRating: null,
      statuses: ['busy'],
    });
  });
  it('checks dates and numbers by the same rules as REST', () => {
    expect(() => rules.date('startDate', '2026-02-30')).toThrow(/^startDate must be a date \(YYYY-MM-DD\)/);
    expect(rules.date('startDate', '2026-02-28')).toBe('2026-02-28');
    expect(() => rules.number('near.radiusMiles', 0, RADIUS)).toThrow(
      'near.radiusMiles must be a number greater than 0 and at most 100',
    );
    expect(rules.number('near.radiusMiles', 100, RADIUS)).toBe(100);
  });
});
