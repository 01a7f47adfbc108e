/** The bench header's transports (bench/environment.ts transports): how the servers reach PostgreSQL and Redis. */
import { transports } from '../../bench/environment';

describe('bench transports', () => {
  test('loopback TCP, the defaults', () => {
    expect(transports('postgres://postgres@127.0.0.1:5432/bars_bench', 'redis://127.0.0.1:6379')).toEqual({
      postgres: 'TCP 127.0.0.1:5432',
      redis: 'TCP 127.0.0.1:6379',
    });
    expect(transports('postgres://u:p@db.internal/bars', 'rediss://:secret@cache.internal')).toEqual({
      postgres: 'TCP db.internal:5432',
      redis: 'TCP cache.internal:6379',
    });
  });

  test('Unix sockets: a percent-encoded directory as host, ?host=, and a socket path for Redis', () => {
    expect(transports('postgres://postgres@%2Fvar%2Frun%2Fpostgresql/bars_bench', '/run/redis/redis.sock')).toEqual({
      postgres: 'Unix socket /var/run/postgresql',
      redis: 'Unix socket /run/redis/redis.sock',
    });
    expect(transports('postgres://postgres@/bars_bench?host=/tmp', '/tmp/r.sock').postgres).toBe('Unix socket /tmp');
    expect(transports('postgres:///bars_bench?host=%2Ftmp', '/tmp/r.sock').postgres).toBe('Unix socket /tmp');
    // a socket URL's query (password, database number) is not printed
    expect(transports('postgres:///b?host=%2Ftmp', '/tmp/r.sock?password=s%40cret&db=2').redis).toBe(
      'Unix socket /tmp/r.sock',
    );
  });

  test('a cluster or sentinel by its scheme, never its password; what is no URL: unknown', () => {
    expect(transports('host=/tmp dbname=x', 'redis+cluster://:pw@a:1,b:2')).toEqual({
      postgres: 'unknown',
      redis: 'redis+cluster',
    });
  });
});
