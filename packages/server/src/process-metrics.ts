import { collectDefaultMetrics, type Registry } from "prom-client";

/**
 * prom-client's process metrics (`process_resident_memory_bytes`, CPU, `nodejs_eventloop_lag_*`,
 * heap, GC) on `registry`, once however many endpoints serve it: a worker's memory and event-loop
 * delay are what sizing its `--concurrency` and its memory limit needs.
 */
export function addProcessMetrics(registry: Registry): void {
  if (registry.getSingleMetric("process_cpu_user_seconds_total")) return;
  collectDefaultMetrics({ register: registry });
}
