import { DelayedError, type Job } from "bullmq";
import { nodeWaiting, type AttemptRef, type Db } from "@ax/store";
import type { Logger } from "pino";
import { withDbRetry } from "./db-retry.js";
import type { WorkerMetrics } from "./metrics.js";

/** How long a handed-back job waits before a worker may take it again. */
const HANDBACK_DELAY_MS = 3000;

export interface HandBackDeps {
  db: Db;
  log: Logger;
  metrics: WorkerMetrics;
  /** How long a node may wait for a worker that defines its task before it fails. */
  unknownTaskGraceMs: number;
}

/**
 * During a rolling deploy a job can reach a worker that does not define its task yet (or any
 * more). Within the grace period, counted by PostgreSQL's clock from when the node became due
 * so that it survives hand-offs between workers, the job goes back to its queue for a while
 * without starting an attempt: this throws BullMQ's `DelayedError`. Returns when the caller
 * should go on: the grace ran out (the node then fails with `AxUnknownTaskError`), or the job
 * does not wait to start (stale, or a takeover the fence decides).
 */
export async function handBackUnknownTask(
  deps: HandBackDeps,
  job: Job,
  token: string | undefined,
  task: string,
  ref: AttemptRef,
): Promise<void> {
  const node = await withDbRetry(() => nodeWaiting(deps.db, ref));
  if (!node?.waiting) return;
  const leftMs = deps.unknownTaskGraceMs - node.dueForMs;
  const log = deps.log.child({ runId: ref.runId, node: ref.nodeKey, attempt: ref.attempt, task });
  if (leftMs <= 0) {
    log.error(
      { waitedMs: Math.round(node.dueForMs) },
      `no worker that defines task "${task}" took the node within the grace period; failing it`,
    );
    return;
  }
  deps.metrics.unknownTaskHandbacks.inc({ task });
  log.warn(
    { waitedMs: Math.round(node.dueForMs), graceLeftMs: Math.round(leftMs) },
    `task "${task}" is not defined in this worker; handed the job back for a worker that defines it (the node fails if none takes it within the grace period)`,
  );
  await job.moveToDelayed(Date.now() + Math.min(HANDBACK_DELAY_MS, Math.ceil(leftMs)), token);
  throw new DelayedError();
}
