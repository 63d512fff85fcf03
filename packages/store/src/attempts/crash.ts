import { sql } from "drizzle-orm";
import type { Db } from "../connect.js";
import { jsonParam, recordset, rows } from "../repositories/raw.js";
import type { ReadyNode } from "../repositories/ready-node.js";
import type { TaskFailure } from "../types.js";
import type { AttemptRef } from "./types.js";

/*
 * An attempt whose worker died (its lease lapsed) or gave it up is taken over by the next job for
 * its node, which BullMQ's stalled check or the reconciler brings back: that job closes it as
 * `crashed` through `retryAttempt` or `failNode`. Below are the two ways a live worker lets go of
 * attempts itself.
 */

/**
 * Gives back attempts a stopping worker could not finish: each attempt still `running` under
 * `worker` is closed as `crashed` with `error`, and its node is queued at once for the next
 * attempt, whatever its retry policy says (the task did not fail; its worker left). The attempts'
 * own later writes find their node moved on and change nothing. Returns the nodes to enqueue.
 */
export async function handBackAttempts(db: Db, worker: string, refs: AttemptRef[], error: TaskFailure): Promise<ReadyNode[]> {
  if (refs.length === 0) return [];
  const wanted = recordset(
    refs.map((r) => ({ run_id: r.runId, node_key: r.nodeKey, n: r.attempt })),
    "run_id uuid, node_key text, n int",
  );
  const found = await rows<{
    run_id: string;
    node_key: string;
    task: string;
    queue: string;
    attempt: number;
    flow_version_id: number;
    priority: number | null;
  }>(
    db,
    sql`
    with mine as (
      select w.run_id, w.node_key, w.n from ${wanted} w
      join attempts a on a.run_id = w.run_id and a.node_key = w.node_key and a.n = w.n
      where a.worker = ${worker} and a.finished_at is null and a.abandoned_at is null
    ), requeued as (
      update node_runs n set status = 'queued', attempt = n.attempt + 1, error = ${jsonParam(error)}::jsonb,
        next_retry_at = null, queued_at = now()
      from mine m
      where n.run_id = m.run_id and n.node_key = m.node_key and n.attempt = m.n and n.status = 'running'
      returning n.run_id, n.node_key, n.task, n.queue, n.attempt
    ), closed as (
      update attempts a set finished_at = now(), outcome = 'crashed', error = ${jsonParam(error)}::jsonb
      from requeued q
      where a.run_id = q.run_id and a.node_key = q.node_key and a.n = q.attempt - 1
    )
    select q.run_id, q.node_key, q.task, q.queue, q.attempt, r.flow_version_id, r.priority
    from requeued q join runs r on r.id = q.run_id`,
  );
  return found.map((r) => ({
    runId: r.run_id,
    nodeKey: r.node_key,
    task: r.task,
    queue: r.queue,
    attempt: r.attempt,
    flowVersionId: r.flow_version_id,
    ...(r.priority ? { priority: r.priority } : {}),
  }));
}

/**
 * Gives a running attempt up to the reconciler: its worker is alive but could not record the
 * attempt's outcome, so the attempt is handled like one whose worker died. True when it applied.
 */
export async function abandonAttempt(db: Db, ref: AttemptRef & { worker: string }): Promise<boolean> {
  const [row] = await rows<{ applied: number }>(
    db,
    sql`
    with abandoned as (
      update attempts a set abandoned_at = now()
      from node_runs n
      where a.run_id = ${ref.runId} and a.node_key = ${ref.nodeKey} and a.n = ${ref.attempt} and a.worker = ${ref.worker}
        and a.finished_at is null and a.abandoned_at is null
        and n.run_id = a.run_id and n.node_key = a.node_key and n.attempt = a.n and n.status = 'running'
      returning 1
    )
    select count(*)::int as applied from abandoned`,
  );
  return Number(row?.applied ?? 0) > 0;
}
