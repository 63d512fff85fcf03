import { Counter, Gauge, Histogram, type Registry } from "prom-client";

export interface WorkerMetrics {
  attemptDuration: Histogram<"task" | "outcome">;
  queueWait: Histogram<"task">;
  attempts: Counter<"task" | "outcome">;
  retries: Counter<"task">;
  consecutiveFailures: Gauge<"task">;
  runsFinished: Counter<"flow" | "status">;
}

/**
 * Attempts and queue waits range from a millisecond to a day: without the long buckets a P99 of
 * ten minutes and one of an hour would both read as the last bucket.
 */
const DURATION_BUCKETS_SECONDS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 600, 1800, 3600, 7200, 21600, 86400];

/** Registers the worker's metrics on `registry` (one registry per Runtime, so tests can run many). */
export function createWorkerMetrics(registry: Registry): WorkerMetrics {
  const registers = [registry];
  return {
    attemptDuration: new Histogram({
      name: "ax_attempt_duration_seconds",
      help: "Duration of task attempts by task and outcome",
      labelNames: ["task", "outcome"],
      buckets: DURATION_BUCKETS_SECONDS,
      registers,
    }),
    queueWait: new Histogram({
      name: "ax_queue_wait_seconds",
      help: "Time from queued to attempt start",
      labelNames: ["task"],
      buckets: DURATION_BUCKETS_SECONDS,
      registers,
    }),
    attempts: new Counter({
      name: "ax_attempts_total",
      help: "Finished attempts by task and outcome",
      labelNames: ["task", "outcome"],
      registers,
    }),
    retries: new Counter({ name: "ax_retries_total", help: "Retries scheduled by task", labelNames: ["task"], registers }),
    consecutiveFailures: new Gauge({
      name: "ax_task_consecutive_failures",
      help: "Final failures (not retried) in a row by task, reset by a success, in attempts this process ran",
      labelNames: ["task"],
      registers,
    }),
    runsFinished: new Counter({
      name: "ax_runs_finished_total",
      help: "Runs that reached a terminal status, by flow and status",
      labelNames: ["flow", "status"],
      registers,
    }),
  };
}
