import type { LimitSpec } from "@ax/coordinator";
import type { ResolvedTaskOptions } from "../task-definition.js";

/** Cluster-wide limits from the live configuration (`max_concurrency`, `pools`). */
export interface ClusterLimits {
  maxConcurrency: number | null;
  pools: Record<string, number>;
}

export const NO_CLUSTER_LIMITS: ClusterLimits = { maxConcurrency: null, pools: {} };

/** A limit that cannot be met as configured: the task waits, saying why, until the configuration changes. */
export interface Unsatisfiable {
  reason: string;
}

/**
 * The limits an attempt of `task` must hold while it runs, read from its options at each fetch
 * so that a new configuration applies to the next attempts.
 */
export function limitSpecOf(task: ResolvedTaskOptions, cluster: ClusterLimits): LimitSpec | Unsatisfiable {
  const spec: LimitSpec = { semaphores: [], rates: [] };
  // Configuration refuses these; a value that slipped through still says why its task waits.
  if (task.concurrency !== null && !(Number.isInteger(task.concurrency) && task.concurrency >= 1)) {
    return { reason: `concurrency ${task.concurrency} lets nothing start: set it to a whole number of at least 1` };
  }
  if (task.rateLimit !== null && !(Number.isInteger(task.rateLimit.max) && task.rateLimit.max >= 1 && task.rateLimit.perMs >= 1)) {
    return {
      reason: `rate limit ${task.rateLimit.max} per ${task.rateLimit.perMs} ms lets nothing start: set max to at least 1 and per to at least 1ms`,
    };
  }
  if (task.concurrency !== null) {
    spec.semaphores.push({ key: `task:${task.name}`, capacity: task.concurrency, weight: 1, label: "concurrency" });
  }
  if (task.pool !== null) {
    const size = cluster.pools[task.pool.name];
    const label = `pool ${task.pool.name}`;
    if (size === undefined) return { reason: `${label} has no size: set pools.${task.pool.name} in the configuration` };
    if (task.pool.slots > size) return { reason: `${label} has ${size} slots but the task takes ${task.pool.slots}` };
    spec.semaphores.push({ key: `pool:${task.pool.name}`, capacity: size, weight: task.pool.slots, label });
  }
  if (cluster.maxConcurrency !== null) {
    spec.semaphores.push({ key: "cluster", capacity: cluster.maxConcurrency, weight: 1, label: "max_concurrency" });
  }
  if (task.rateLimit !== null) {
    spec.rates.push({ key: `rate:${task.name}`, max: task.rateLimit.max, perMs: Math.round(task.rateLimit.perMs), label: "rate limit" });
  }
  return spec;
}

export function isLimited(spec: LimitSpec): boolean {
  return spec.semaphores.length > 0 || spec.rates.length > 0;
}

/** A task whose starts go through the gate, or cannot start at all. */
export function isLimitedNow(spec: LimitSpec | Unsatisfiable): boolean {
  return "reason" in spec || isLimited(spec);
}
