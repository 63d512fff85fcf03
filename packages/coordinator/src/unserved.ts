import { descendantsOf, failNode, flowVersionById, startAttempts, unservedNodes, type Db } from "@ax/store";
import { AxUnknownTaskError } from "@ax/common";
import type { Logger } from "pino";
import { nodeJobId, type QueueRegistry } from "./queues.js";

/** Recorded as the attempt's worker: no worker ran it, the reconciler closed it. */
const RECONCILER = "reconciler";

/**
 * Fails, once each, the nodes no live worker has served within `graceMs`: the attempt is started
 * and failed under the fence like any other, its pending descendants are skipped, and its job
 * leaves Redis. Returns how many nodes were failed.
 */
export async function failUnservedNodes(
  db: Db,
  queues: QueueRegistry,
  window: { graceMs: number; leaseMs: number },
  log: Logger,
): Promise<number> {
  let failed = 0;
  for (const node of await unservedNodes(db, { ...window, limit: 100 })) {
    const ref = { runId: node.runId, nodeKey: node.nodeKey, attempt: node.attempt };
    const [started] = await startAttempts(db, RECONCILER, [{ ...ref, upstreamKeys: [] }]);
    if (!started) continue;
    const version = await flowVersionById(db, node.flowVersionId);
    const error = new AxUnknownTaskError(node.task, node.queue, node.waitedMs);
    await failNode(db, {
      ...ref,
      outcome: "failed",
      error: { name: error.name, message: error.message, stack: null, kind: "error", notRetried: "no worker serves its task" },
      descendants: version ? descendantsOf(version.dag, [node.nodeKey]) : [],
      blocking: true,
    });
    await queues
      .forNode(node)
      .remove(nodeJobId(node.runId, node.nodeKey, node.attempt))
      .catch(() => 0);
    log.error({ runId: node.runId, node: node.nodeKey, task: node.task, queue: node.queue }, error.message);
    failed += 1;
  }
  return failed;
}
