/**
 * Where the database is: DATABASE_URL when set, otherwise the embedded server
 * (started here, or shared with another process of this project).
 */
import type { Config } from '../config';
import { startEmbeddedPostgres } from '../../db/tools/embedded';

export interface DatabaseLocation {
  url: string;
  embedded: boolean;
  stop(): Promise<void>;
}

export async function locateDatabase(config: Config, onLog?: (line: string) => void): Promise<DatabaseLocation> {
  if (config.databaseUrl) return { url: config.databaseUrl, embedded: false, stop: async () => {} };
  const server = await startEmbeddedPostgres({ ...config.embedded, onLog });
  return { url: server.url, embedded: true, stop: () => server.stop() };
}
