import { enqueueNodes, type QueueRegistry } from "@ax/coordinator";
import { handBackAttempts, runningAttemptsOf, type Db, type TaskFailure } from "@ax/store";
import { AxOutcomeLostError } from "@ax/common";
import type { Logger } from "pino";
import { attemptKey } from "./attempt-deps.js";

export interface LostOutcomes {
  db: Db;
  queues: QueueRegistry;
  workerId: string;
  /** Attempts this process is executing now (`AttemptDeps.executing`). */
  executing: Set<string>;
  log: Logger;
}

/** Younger attempts may be a completion's continuation that this process has not begun executing yet. */
export const LOST_OUTCOME_MIN_AGE_MS = 5000;

/**
 * Attempts PostgreSQL records as running under this worker that this process does not execute:
 * an outcome committed without waiting for the disk and lost in a PostgreSQL crash, or a
 * completion that started the next node whose reply was lost (the retried write then matched
 * nothing). Their nodes are queued again at once, without charging a retry, as a stop's
 * hand-back does: the lease is alive, so the reconciler would never take them over.
 */
export async function requeueLostOutcomes(o: LostOutcomes): Promise<number> {
  const running = await runningAttemptsOf(o.db, o.workerId, LOST_OUTCOME_MIN_AGE_MS);
  const lost = running.filter((ref) => !o.executing.has(attemptKey(ref)));
  if (lost.length === 0) return 0;
  const error = new AxOutcomeLostError(o.workerId);
  const failure: TaskFailure = { name: error.name, message: error.message, stack: null, kind: "crashed" };
  const nodes = await handBackAttempts(o.db, o.workerId, lost, failure);
  o.log.warn(
    { attempts: lost.length, requeued: nodes.length },
    "attempts recorded as running here were not executing (outcome lost); their nodes run again",
  );
  await enqueueNodes(o.queues, nodes);
  return nodes.length;
}
