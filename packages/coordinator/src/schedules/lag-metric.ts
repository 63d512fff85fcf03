import type { Histogram, Registry } from "prom-client";
import { promClient } from "../prom-client-lazy.js";

export type LagObserver = (flow: string, seconds: number) => void;

/** `ax_schedule_lag_seconds{flow}`: from a tick's fire time to its run's creation, on time ticks only. */
export function scheduleLagMetric(registry: Registry): LagObserver {
  const name = "ax_schedule_lag_seconds";
  const histogram =
    (registry.getSingleMetric(name) as Histogram<"flow"> | undefined) ??
    new (promClient().Histogram)({
      name,
      help: "Seconds from a schedule tick's fire time to its run being created",
      labelNames: ["flow"],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    });
  return (flow, seconds) => histogram.observe({ flow }, seconds);
}
