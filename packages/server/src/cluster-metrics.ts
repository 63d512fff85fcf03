import { Gauge, type Registry } from "prom-client";
import { countRunsByStatus, countStuckRuns, type Db } from "@ax/store";
import { queueOverview, type QueueRegistry } from "@ax/coordinator";
import { isStoreOutage, RUN_STATUSES, TERMINAL_RUN_STATUSES } from "@ax/common";
import { FinishedRunCounts } from "./finished-run-counts.js";

const UNFINISHED_RUN_STATUSES = RUN_STATUSES.filter((s) => !TERMINAL_RUN_STATUSES.includes(s));

export interface ClusterMetricsOptions {
  db: Db;
  queues: QueueRegistry;
  registry: Registry;
  /** A run `running` longer than this counts as stuck (`ax server --stuck-after`, Runtime's `metrics.stuckAfterMs`). @defaultValue 1 hour */
  stuckAfterMs?: number | undefined;
}

/**
 * A gauge's rows, or none while PostgreSQL or Redis cannot be reached: that gauge has no series
 * for the scrape, and every other metric (the process's own, the other store's) is still served.
 */
async function unlessUnreachable<T>(rows: Promise<T[]>): Promise<T[]> {
  return rows.catch((error: unknown) => {
    if (isStoreOutage(error)) return [];
    throw error;
  });
}

/**
 * Gauges read from PostgreSQL and Redis at scrape time, so any API process reports the whole
 * cluster: runs by flow and status, runs stuck `running`, queue depth by queue and state.
 */
export function registerClusterMetrics(options: ClusterMetricsOptions): void {
  const { db, queues, registry } = options;
  const registers = [registry];
  const finished = new FinishedRunCounts(() => countRunsByStatus(db, TERMINAL_RUN_STATUSES));
  new Gauge({
    name: "ax_runs",
    help: "Runs by flow and status",
    labelNames: ["flow", "status"],
    registers,
    async collect() {
      this.reset();
      // Both or neither: a scrape during an outage must not show finished counts without the rest.
      const counts = Promise.all([countRunsByStatus(db, UNFINISHED_RUN_STATUSES), finished.read()]).then((parts) => parts.flat());
      for (const r of await unlessUnreachable(counts)) this.set({ flow: r.flow, status: r.status }, r.count);
    },
  });
  new Gauge({
    name: "ax_runs_stuck",
    help: "Runs still running past the stuck threshold, by flow",
    labelNames: ["flow"],
    registers,
    async collect() {
      this.reset();
      for (const r of await unlessUnreachable(countStuckRuns(db, options.stuckAfterMs ?? 3_600_000))) this.set({ flow: r.flow }, r.count);
    },
  });
  new Gauge({
    name: "ax_queue_jobs",
    help: "BullMQ jobs by task queue (group.task: in use, or served by a live worker) and state (waiting, delayed, active)",
    labelNames: ["queue", "state"],
    registers,
    async collect() {
      this.reset();
      for (const q of await unlessUnreachable(queueOverview(db, queues))) {
        for (const state of ["waiting", "delayed", "active"] as const) this.set({ queue: q.name, state }, q[state]);
      }
    },
  });
}
