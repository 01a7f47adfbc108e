// Replaced by the demo data generator (issue 2, item 3).
export interface SeedOptions { bars: number; seed?: number; onProgress?: (message: string) => void }
export async function seedDemoData(_databaseUrl: string, _options: SeedOptions): Promise<void> {
  throw new Error('demo data generator not built yet');
}
