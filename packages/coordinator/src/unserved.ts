import {
  descendantsOf,
  failNode,
  firstFailedNode,
  flowVersionById,
  listCodeOptions,
  startAttempts,
  unservedNodes,
  type Db,
  type UnservedNode,
} from "@ax/store";
import { AxUnknownTaskError, AxWorkerCrashedError } from "@ax/common";
import type { Logger } from "pino";
import { nodeJobId, type QueueRegistry } from "./queues.js";

/** Recorded as the attempt's worker: no worker ran it, the reconciler closed it. */
const RECONCILER = "reconciler";

/**
 * Fails, once each, the nodes no live worker has served within `graceMs`: the attempt is started
 * and failed under the fence like any other (one its lost worker left running is closed as
 * `crashed`), its pending descendants are skipped, its job leaves
 * Redis, and `task_failed` (and `run_failed` when it ends the run) are raised as a worker would,
 * so alerts hear of it. Returns how many nodes were failed.
 */
export async function failUnservedNodes(
  db: Db,
  queues: QueueRegistry,
  window: { graceMs: number; leaseMs: number },
  log: Logger,
): Promise<number> {
  let failed = 0;
  const nodes = await unservedNodes(db, { ...window, limit: 100 });
  const groups = nodes.length > 0 ? await alertGroups(db) : new Map<string, string>();
  for (const node of nodes) {
    const ref = { runId: node.runId, nodeKey: node.nodeKey, attempt: node.attempt };
    // A node its lost worker left running has its attempt open already: closing it is the failure below.
    const lost = node.lostWorker !== undefined;
    if (!lost) {
      const [started] = await startAttempts(db, RECONCILER, [{ ...ref, upstreamKeys: [] }]);
      if (!started) continue;
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
      blocking: true,
    });
    await queues
      .forNode(node)
      .remove(nodeJobId(node.runId, node.nodeKey, node.attempt))
      .catch(() => 0);
    if (!advanced.applied) continue;
    log.error({ runId: node.runId, node: node.nodeKey, task: node.task, queue: node.queue, lostWorker: node.lostWorker }, error.message);
    await publishFailure(db, queues, node, groups.get(node.task), { name: error.name, message: error.message }, advanced);
    failed += 1;
  }
  return failed;
}

/** The `alertGroup` each task's code gives it, as the Runtimes registered it: no worker with the code is left to say. */
async function alertGroups(db: Db): Promise<Map<string, string>> {
  const groups = new Map<string, string>();
  for (const row of await listCodeOptions(db)) {
    const group = row.options.alertGroup;
    if (row.kind === "task" && typeof group === "string") groups.set(row.name, group);
  }
  return groups;
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
  if (advanced.runFinished !== "failed") return;
  const first = await firstFailedNode(db, node.runId).catch(() => undefined);
  queues.events.publish({ name: "run_failed", ...run, ...(first ?? {}) });
}
