import {
  descendantsOf,
  failNode,
  firstFailedNode,
  flowVersionById,
  startAttempts,
  unservedNodes,
  type Db,
  type UnservedNode,
} from "@ax/store";
import { AxUnknownTaskError, AxWorkerCrashedError } from "@ax/common";
import type { Logger } from "pino";
import { nodeJobId, type QueueRegistry } from "./queues.js";
import { parkedReasonsKey } from "./wake.js";

/** Recorded as the attempt's worker: no worker ran it, the reconciler closed it. */
const RECONCILER = "reconciler";

/** What a task's options in force say of its failure: whether it fails its run (`onFailure`), and where its alerts go. */
export interface FailurePolicy {
  blocking: boolean;
  alertGroup: string | undefined;
}

/**
 * The policies of `tasks`, by the configuration in force over the options their code registered:
 * no live worker is left to say, since none serves them. A task missing from the map fails its run.
 */
export type FailurePolicies = (tasks: readonly string[]) => Promise<Map<string, FailurePolicy>>;

/**
 * Fails, once each, the nodes no live worker has served within `graceMs`: the attempt is started
 * and failed under the fence like any other (one its lost worker left running is closed as
 * `crashed`), its pending descendants are skipped, its job leaves
 * Redis, and `task_failed` (and `run_failed` when it ends the run) are raised as a worker would,
 * so alerts hear of it; a task with `onFailure: "notify_only"` leaves its run going, as it would
 * had a worker failed it. Returns how many nodes were failed.
 */
export async function failUnservedNodes(
  db: Db,
  queues: QueueRegistry,
  window: { graceMs: number; leaseMs: number },
  log: Logger,
  failurePolicies: FailurePolicies,
): Promise<number> {
  let failed = 0;
  const nodes = await unservedNodes(db, { ...window, limit: 100 });
  const policies = nodes.length > 0 ? await failurePolicies([...new Set(nodes.map((n) => n.task))]) : new Map<string, FailurePolicy>();
  for (const node of nodes) {
    const policy = policies.get(node.task);
    const ref = { runId: node.runId, nodeKey: node.nodeKey, attempt: node.attempt };
    // A node its lost worker left running has its attempt open already: closing it is the failure below.
    const lost = node.lostWorker !== undefined;
    if (!lost) {
      const [started] = await startAttempts(db, RECONCILER, [{ ...ref, upstreamKeys: [] }]);
      if (!started) continue;
      // Its first node's start starts the run, as a worker's would: listeners hear of it before its end.
      if (started.runStarted)
        queues.events.publish({ name: "run_started", runId: node.runId, flow: node.flow, businessKey: node.businessKey });
    }
    const version = await flowVersionById(db, node.flowVersionId);
    const error = lost
      ? new AxWorkerCrashedError(node.lostWorker ?? null, node.attempt, node)
      : new AxUnknownTaskError(node.task, node.queue, node.waitedMs);
    const advanced = await failNode(db, {
      ...ref,
      outcome: lost ? "crashed" : "failed",
      error: { name: error.name, message: error.message, stack: null, kind: "error", notRetried: "no worker serves its task" },
      descendants: version ? descendantsOf(version.dag, [node.nodeKey]) : [],
      blocking: policy?.blocking ?? true,
    });
    const jobId = nodeJobId(node.runId, node.nodeKey, node.attempt);
    await queues
      .forNode(node)
      .remove(jobId)
      .catch(() => 0);
    // A job a limit had delayed leaves its reason behind otherwise.
    await queues.connection.hdel(parkedReasonsKey(queues.prefix), jobId).catch(() => 0);
    if (!advanced.applied) continue;
    log.error({ runId: node.runId, node: node.nodeKey, task: node.task, queue: node.queue, lostWorker: node.lostWorker }, error.message);
    await publishFailure(db, queues, node, policy?.alertGroup, { name: error.name, message: error.message }, advanced);
    failed += 1;
  }
  return failed;
}

async function publishFailure(
  db: Db,
  queues: QueueRegistry,
  node: UnservedNode,
  alertGroup: string | undefined,
  error: { name: string; message: string },
  advanced: { runFinished: string | null },
): Promise<void> {
  const run = { runId: node.runId, flow: node.flow, businessKey: node.businessKey };
  queues.events.publish({
    name: "task_failed",
    ...run,
    nodeKey: node.nodeKey,
    task: node.task,
    attempt: node.attempt,
    ...(alertGroup ? { alertGroup } : {}),
    error,
  });
  // A notify_only node, failed last, ends its run in success.
  if (advanced.runFinished === "success") queues.events.publish({ name: "run_succeeded", ...run });
  if (advanced.runFinished !== "failed") return;
  const first = await firstFailedNode(db, node.runId).catch(() => undefined);
  queues.events.publish({ name: "run_failed", ...run, ...(first ?? {}) });
}
