/**
 * Prometheus metrics (prom-client), served as text on the operator listener
 * (GET /metrics, operator token). One registry per process; every module that
 * has something to report imports the metric it updates from here, so the
 * names and labels live in one place (docs/OPERATIONS.md lists them).
 *
 * With WEB_CONCURRENCY > 1 each worker has its own registry; the primary
 * serves the operator listener and aggregates the workers' registries
 * (AggregatorRegistry), so a scrape sees the whole instance.
 */
import cluster from 'node:cluster';
import { AggregatorRegistry, Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export const registry = new Registry();
registry.setDefaultLabels({ service: 'partner-bar-api' });
collectDefaultMetrics({ register: registry });
// A worker answers the primary's aggregation requests with this registry.
if (cluster.isWorker) AggregatorRegistry.setRegistries(registry);

/** Partner requests by route pattern ('bars/:id', '(none)' when no route matched), method and status. */
export const httpRequests = new Counter({
  name: 'partner_http_requests_total',
  help: 'Partner HTTP requests answered, by route pattern, method and status code',
  labelNames: ['route', 'method', 'status'] as const,
  registers: [registry],
});

/** Latency from the first byte of the request to the end of the answer. */
export const httpDuration = new Histogram({
  name: 'partner_http_request_duration_seconds',
  help: 'Partner HTTP request duration in seconds, by route pattern',
  labelNames: ['route'] as const,
  buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});

/** 429s by bucket: minute, day, month, or failed_auth. (Updated by the rate limiter.) */
export const rateLimitRejections = new Counter({
  name: 'partner_rate_limit_rejections_total',
  help: 'Requests rejected with 429, by bucket (minute, day, month, failed_auth)',
  labelNames: ['bucket'] as const,
  registers: [registry],
});

/** 1 while rate limits count in-process because Redis is unreachable (or its circuit is open). */
export const redisFallback = new Gauge({
  name: 'partner_redis_fallback',
  help: '1 while rate limits fall back to per-instance counting (Redis unavailable), else 0',
  registers: [registry],
});

/** Buffers and ArrayBuffers (part of nodejs_external_memory_bytes; prom-client has no default for it). */
export const arrayBuffersBytes = new Gauge({
  name: 'partner_nodejs_array_buffers_bytes',
  help: 'Memory allocated for ArrayBuffers and Buffers (process.memoryUsage().arrayBuffers), part of nodejs_external_memory_bytes',
  registers: [registry],
  collect() {
    this.set(process.memoryUsage().arrayBuffers);
  },
});

/** PostgreSQL pool use, by pool name (partner, replica:<n>, ...) and state. */
export const dbPoolConnections = new Gauge({
  name: 'partner_db_pool_connections',
  help: 'PostgreSQL pool connections by pool and state (total, idle, waiting = queued requests)',
  labelNames: ['pool', 'state'] as const,
  registers: [registry],
  collect: () => collectPools(),
});

/** Webhook deliveries waiting to be sent. (Updated by the webhook worker.) */
export const webhookQueueDepth = new Gauge({
  name: 'partner_webhook_queue_depth',
  help: 'Webhook deliveries pending',
  registers: [registry],
});

/** Webhook delivery attempts that failed. (Updated by the webhook worker.) */
export const webhookFailures = new Counter({
  name: 'partner_webhook_delivery_failures_total',
  help: 'Webhook delivery attempts that failed',
  registers: [registry],
});

/** Usage-alert e-mails accepted by the SMTP server (or written to the outbox). (Updated by the e-mail task.) */
export const emailsSent = new Counter({
  name: 'partner_emails_sent_total',
  help: 'Usage-alert e-mails sent (accepted by the SMTP server, or written to the outbox)',
  registers: [registry],
});

/** Usage-alert e-mail attempts that failed: temporary (retried), bounce (permanent 5xx), expired (24 h of retries). */
export const emailsFailed = new Counter({
  name: 'partner_emails_failed_total',
  help: 'Usage-alert e-mail attempts that failed, by reason (temporary, bounce, expired)',
  labelNames: ['reason'] as const,
  registers: [registry],
});

/** Each read replica's replay lag, by replica (replica:<n>): how many seconds of the primary's changes it may lack. */
export const dbReplicaLag = new Gauge({
  name: 'partner_db_replica_lag_seconds',
  help: 'Read replica replay lag in seconds (changes on the primary it may not have yet), by replica; over DATABASE_READ_MAX_LAG_MS it is skipped',
  labelNames: ['replica'] as const,
  registers: [registry],
  aggregator: 'max', // WEB_CONCURRENCY > 1: every worker measures the same replica
});

interface PoolLike {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
}

const pools = new Map<string, PoolLike>();

/** Reports a pg.Pool's use under `name` at every scrape (read when collected, no timer). */
export function trackPool(name: string, pool: PoolLike): void {
  pools.set(name, pool);
}

/** Stops reporting a pool (it was ended). */
export function untrackPool(name: string): void {
  pools.delete(name);
  for (const state of ['total', 'idle', 'waiting']) dbPoolConnections.remove({ pool: name, state });
}

function collectPools(): void {
  for (const [name, pool] of pools) {
    dbPoolConnections.set({ pool: name, state: 'total' }, pool.totalCount);
    dbPoolConnections.set({ pool: name, state: 'idle' }, pool.idleCount);
    dbPoolConnections.set({ pool: name, state: 'waiting' }, pool.waitingCount);
  }
}

/** The Prometheus text exposition of every metric of this process. */
export async function metricsText(): Promise<{ contentType: string; body: string }> {
  return { contentType: registry.contentType, body: await registry.metrics() };
}

/** Partner GraphQL (beta): queries run, points charged, and documents rejected before execution by reason. */
export const graphqlRequests = new Counter({
  name: 'partner_graphql_requests_total',
  help: 'Partner GraphQL queries executed',
  registers: [registry],
});
export const graphqlPoints = new Counter({
  name: 'partner_graphql_points_total',
  help: 'Rate-limit points charged for partner GraphQL queries',
  registers: [registry],
});
export const graphqlRejections = new Counter({
  name: 'partner_graphql_rejections_total',
  help: 'Partner GraphQL documents rejected before execution, by error code (bounds, node limit, validation)',
  labelNames: ['code'] as const,
  registers: [registry],
});

/** The request log (server/usage/request-log.ts): entries stored, dropped (by reason), and waiting in the buffer. */
export const requestLogWritten = new Counter({
  name: 'partner_request_log_written_total',
  help: 'Request log entries stored in PostgreSQL',
  registers: [registry],
});
export const requestLogDropped = new Counter({
  name: 'partner_request_log_dropped_total',
  help: 'Request log entries dropped: buffer_full (PostgreSQL slow or down), write_error (a batch PostgreSQL refused)',
  labelNames: ['reason'] as const,
  registers: [registry],
});
export const requestLogCapped = new Counter({
  name: 'partner_request_log_capped_total',
  help: 'Request log entries not kept by its bounds (the usage history still counts them): minute_cap (over 1,000 a key and minute in this instance), repeat_429 (a 429 after the first of the key and minute), across_instances (refused by api.record_requests: the bounds across instances)',
  labelNames: ['reason'] as const,
  registers: [registry],
});
export const requestLogBuffered = new Gauge({
  name: 'partner_request_log_buffer_entries',
  help: 'Request log entries waiting in memory for the next batch',
  registers: [registry],
});

/** 1 while a database's circuit breaker is open (db/pg-breaker.ts: PostgreSQL not answering; requests get 503). */
export const dbBreakerOpen = new Gauge({
  name: 'partner_db_breaker_open',
  help: "1 while a database's circuit breaker is open (not answering: partner requests get 503), else 0",
  labelNames: ['database'] as const,
  registers: [registry],
});

/** The compressed-answer cache (http/compressed-cache.ts): lookups by result, evictions, bytes held. */
export const compressedCacheLookups = new Counter({
  name: 'partner_compressed_cache_lookups_total',
  help: 'Compressed-answer cache lookups, by content coding and result (hit, miss; per_request: an answer around a point, compressed for its request and not kept)',
  labelNames: ['encoding', 'result'] as const,
  registers: [registry],
});
export const compressedCacheEvictions = new Counter({
  name: 'partner_compressed_cache_evictions_total',
  help: 'Compressed answers evicted from the cache (least recently used first) to stay within its size',
  registers: [registry],
});
export const compressedCacheBytes = new Gauge({
  name: 'partner_compressed_cache_bytes',
  help: 'Bytes of compressed answers held by the cache (COMPRESSED_CACHE_MB bounds it)',
  registers: [registry],
});

/** Late rate-limit script replies whose count was given back in Redis (ratelimit/limiters.ts giveBackIfLate). */
export const rateLimitLateCountsGivenBack = new Counter({
  name: 'partner_rate_limit_late_counts_given_back_total',
  help: 'Requests counted in process after their Redis budget ran out that Redis then counted too, given back there',
  registers: [registry],
});

/** 429s answered from the process's memory of a full bucket, without Redis (ratelimit/limiters.ts). */
export const rateLimitLocalRefusals = new Counter({
  name: 'partner_rate_limit_local_refusals_total',
  help: 'Requests refused with 429 locally (the key, or for failed_auth the address, was refused earlier in the same window), by bucket',
  labelNames: ['bucket'] as const,
  registers: [registry],
});

/** Refused keys' and blocked addresses' 429s held before they are written (http/refusal-hold.ts), by outcome. */
export const rateLimitRefusalsHeld = new Counter({
  name: 'partner_rate_limit_refusals_held_total',
  help: "Refused keys' and blocked addresses' 429s held before being written: written, client_gone (closed while held), full (RATE_LIMIT_REFUSAL_HOLD_MAX held already: written at once)",
  labelNames: ['outcome'] as const,
  registers: [registry],
});
