import { enqueueNodes, type QueueRegistry } from "@ax/coordinator";
import { handBackAttempts, runningAttemptsOf, type Db, type TaskFailure } from "@ax/store";
import { AxOutcomeLostError } from "@ax/common";
import type { Logger } from "pino";
import { attemptKey } from "./run-attempt.js";

export interface LostOutcomes {
  db: Db;
  queues: QueueRegistry;
  workerId: string;
  /** Attempts this process is executing now (`AttemptDeps.executing`). */
  executing: Set<string>;
  log: Logger;
}

/**
 * After PostgreSQL restarted: an attempt it records as running under this worker, which this
 * process no longer executes, had its outcome committed without waiting for the disk and lost.
 * Its node is queued again at once, without charging its retries, as a stop's hand-back does;
 * the lease is alive, so the reconciler would never take it over.
 */
export async function requeueLostOutcomes(o: LostOutcomes): Promise<number> {
  const running = await runningAttemptsOf(o.db, o.workerId);
  const lost = running.filter((ref) => !o.executing.has(attemptKey(ref)));
  if (lost.length === 0) return 0;
  const error = new AxOutcomeLostError(o.workerId);
  const failure: TaskFailure = { name: error.name, message: error.message, stack: null, kind: "crashed" };
  const nodes = await handBackAttempts(o.db, o.workerId, lost, failure);
  o.log.warn(
    { attempts: lost.length, requeued: nodes.length },
    "PostgreSQL restarted and lost these attempts' outcomes; their nodes run again",
  );
  await enqueueNodes(o.queues, nodes);
  return nodes.length;
}
