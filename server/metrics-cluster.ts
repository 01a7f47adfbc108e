/**
 * /metrics in the primary when WEB_CONCURRENCY > 1: the workers' registries
 * summed (prom-client's AggregatorRegistry over the cluster IPC channel).
 */
import { AggregatorRegistry, type PrometheusContentType } from 'prom-client';

let aggregator: AggregatorRegistry<PrometheusContentType> | undefined;

export async function clusterMetricsText(): Promise<{ contentType: string; body: string }> {
  aggregator ??= new AggregatorRegistry();
  return { contentType: aggregator.contentType, body: await aggregator.clusterMetrics() };
}
