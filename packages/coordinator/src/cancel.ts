import { cancelRunRecords, type Db, type RunStatus } from "@ax/store";
import { nodeJobId, type QueueRegistry } from "./queues.js";
import { answeredByRedis } from "./redis.js";
import { parkedReasonsKey } from "./wake.js";
import { AxCancelledError } from "@ax/common";

/** The pub/sub channel every worker of a cluster (one queue prefix) listens on for cancels. */
export function cancelChannel(prefix: string): string {
  return `${prefix}:ax:cancel`;
}

/** What travels on `cancelChannel`. */
export interface CancelMessage {
  runId: string;
}

export interface CancelDeps {
  db: Db;
  queues: QueueRegistry;
}

export interface CancelResult {
  runId: string;
  /** False when the run had already finished (or been cancelled): nothing changed. */
  cancelled: boolean;
  /** The run's status after the call. */
  status: RunStatus;
  /** Waiting or delayed jobs taken out of Redis. */
  removedJobs: number;
}

/**
 * Cancels a run: PostgreSQL first (the truth: the run and its open nodes end `cancelled`), then
 * a message that makes workers abort the run's in-flight attempts, then its queued and delayed
 * jobs leave Redis. An active job cannot be removed; its attempt is aborted and whatever it
 * reports later is dropped by the attempt fences, as is any job that escaped removal.
 *
 * The Redis half is repeated when a cancelled run is cancelled again, so a call that failed
 * after the commit can simply be retried. Returns undefined for an unknown run. `reason` goes into
 * the cancelled nodes' error (ax cancelling a run for a concurrency key's strategy).
 */
export async function cancelRun(deps: CancelDeps, runId: string, reason?: string): Promise<CancelResult | undefined> {
  const error = new AxCancelledError(runId, reason);
  const outcome = await cancelRunRecords(deps.db, runId, { name: error.name, message: error.message, stack: null, kind: "error" });
  if (!outcome.found) return undefined;
  if (outcome.status !== "cancelled") return { runId, cancelled: false, status: outcome.status, removedJobs: 0 };

  if (outcome.cancelled && outcome.flow !== undefined) {
    deps.queues.events.publish({ name: "run_cancelled", runId, flow: outcome.flow, businessKey: outcome.businessKey ?? null });
  }
  const removed = await answeredByRedis(
    deps.queues.connection,
    stopInRedis(deps.queues, runId, outcome.nodes),
    `cancelling run ${runId}`,
    "the run is cancelled in PostgreSQL, but its running attempts were not told to stop and its jobs are still in Redis (workers drop them when they fetch them). Cancel it again once Redis answers",
  );
  return { runId, cancelled: outcome.cancelled, status: "cancelled", removedJobs: removed };
}

/** Tells workers to abort the run's attempts and takes its jobs out of Redis; returns how many jobs it removed. */
async function stopInRedis(
  queues: QueueRegistry,
  runId: string,
  nodes: { nodeKey: string; attempt: number; queue: string; task: string }[],
): Promise<number> {
  const message: CancelMessage = { runId };
  await queues.connection.publish(cancelChannel(queues.prefix), JSON.stringify(message));
  const jobs = nodes.filter((n) => n.attempt > 0).map((n) => ({ node: n, jobId: nodeJobId(runId, n.nodeKey, n.attempt) }));
  const removed = await Promise.all(
    jobs.map(async ({ node, jobId }) => {
      const queue = queues.forNode(node);
      // BullMQ answers 1 for a job that is not there too: only a job seen first counts as removed.
      const existed = await queues.connection.exists(queue.toKey(jobId));
      return existed === 1 && (await queue.remove(jobId)) === 1;
    }),
  );
  // A job parked by a per-key limit leaves its reason behind otherwise: nothing admits it any more.
  if (jobs.length > 0) await queues.connection.hdel(parkedReasonsKey(queues.prefix), ...jobs.map((j) => j.jobId));
  return removed.filter(Boolean).length;
}
