import { sql } from "drizzle-orm";
import type { Db } from "../connect.js";
import { jsonParam, rows, uuidList } from "../repositories/raw.js";
import { TERMINAL_RUN_STATUSES, type TaskFailure, type TaskStatus } from "../types.js";
import { lockRuns } from "./lock-order.js";
import type { CancelledNode, RunCancellation } from "./types.js";

const NON_TERMINAL_NODES = sql`('pending', 'queued', 'retrying', 'running')`;

/**
 * Cancels a run in one transaction: every non-terminal node becomes `cancelled`, running
 * attempts are closed with `failure`, which also becomes the error of every cancelled node that
 * had none (a retrying node keeps its last attempt's), and the run ends `cancelled`.
 * A terminal run is left as it is.
 *
 * Locks follow the order of every multi-row write of a run (`lockRuns`: the run row, then its
 * nodes), so a completion racing the cancel waits or is waited for, never deadlocks. Whichever
 * commits first wins; the attempt fences (`status = 'running'`) drop any later completion, retry
 * or failure of a cancelled node.
 */
export async function cancelRunRecords(db: Db, runId: string, failure: TaskFailure): Promise<RunCancellation> {
  return db.transaction(async (tx) => {
    const [run] = await lockRuns(tx, [runId]);
    const locked = await rows<{ node_key: string; queue: string; task: string; attempt: number; status: TaskStatus }>(
      tx,
      sql`
      select node_key, queue, task, attempt, status from node_runs
      where run_id = ${runId} and status in ${NON_TERMINAL_NODES}
      order by (status = 'running') desc, node_key
      for update`,
    );
    if (!run) return { found: false };
    if (run.status === "cancelled") return { found: true, cancelled: false, status: run.status, nodes: await cancelledNodes(tx, runId) };
    if (TERMINAL_RUN_STATUSES.includes(run.status)) return { found: true, cancelled: false, status: run.status, nodes: [] };

    const failureJson = jsonParam(failure);
    // The time of the cancel itself, after the locks: now() is when this transaction began, which
    // can precede the finish of a node whose completion committed while we waited.
    await tx.execute(sql`
      update node_runs set status = 'cancelled', finished_at = clock_timestamp(), next_retry_at = null,
        error = case when status = 'running' then ${failureJson}::jsonb else coalesce(error, ${failureJson}::jsonb) end
      where run_id = ${runId} and status in ${NON_TERMINAL_NODES}`);
    await tx.execute(sql`
      update attempts set finished_at = clock_timestamp(), outcome = 'failed', error = ${failureJson}::jsonb
      where run_id = ${runId} and finished_at is null`);
    // The run is terminal from here on: nothing remains for the lifecycle to count down.
    const [ended] = await rows<{ flow: string; business_key: string | null }>(
      tx,
      sql`
      update runs set status = 'cancelled', finished_at = clock_timestamp(), nodes_remaining = 0
      where id = ${runId} returning flow, business_key`,
    );
    return {
      found: true,
      cancelled: true,
      status: "cancelled",
      flow: ended!.flow,
      businessKey: ended!.business_key,
      nodes: locked.map((n) => ({ nodeKey: n.node_key, queue: n.queue, task: n.task, attempt: Number(n.attempt), previous: n.status })),
    };
  });
}

async function cancelledNodes(db: Db, runId: string): Promise<CancelledNode[]> {
  const found = await rows<{ node_key: string; queue: string; task: string; attempt: number }>(
    db,
    sql`select node_key, queue, task, attempt from node_runs where run_id = ${runId} and status = 'cancelled'`,
  );
  return found.map((n) => ({ nodeKey: n.node_key, queue: n.queue, task: n.task, attempt: Number(n.attempt), previous: "cancelled" }));
}

/** Which of these runs are cancelled: a worker's backstop for a cancel message it missed. */
export async function cancelledRunIds(db: Db, runIds: string[]): Promise<string[]> {
  if (runIds.length === 0) return [];
  const found = await rows<{ id: string }>(
    db,
    sql`select id from runs where status = 'cancelled'
      and id in ${uuidList(runIds)}`,
  );
  return found.map((r) => r.id);
}
