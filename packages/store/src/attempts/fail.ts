import { sql } from "drizzle-orm";
import type { Db } from "../connect.js";
import { jsonParam, rows, textList } from "../repositories/raw.js";
import type { AttemptOutcome, RunStatus, TaskFailure } from "../types.js";
import { finishRunsSql } from "./finish-run.js";
import { lockRuns } from "./lock-order.js";
import type { Advanced, AttemptEnd, AttemptRef } from "./types.js";

/**
 * Fails the node for good: its pending descendants become `skipped`, and the run counts them all
 * down; `blocking` (onFailure "fail") makes the run's outcome `failed`.
 */
export async function failNode(
  db: Db,
  ref: AttemptRef & AttemptEnd & { outcome: AttemptOutcome; error: TaskFailure; descendants: string[]; blocking: boolean },
): Promise<Advanced> {
  const error: TaskFailure = ref.blocking ? ref.error : { ...ref.error, notifyOnly: true };
  const row = await db.transaction(async (tx) => {
    await lockRuns(tx, [ref.runId]);
    const [row] = await rows<{
      applied: number;
      run_status: RunStatus | null;
      nodes_remaining: number | null;
    }>(
      tx,
      sql`
      with failed as (
        update node_runs set status = 'failed', error = ${jsonParam(error)}::jsonb,
          finished_at = least(now(), ${ref.endedAt?.toISOString() ?? null}::timestamptz)
        where run_id = ${ref.runId} and node_key = ${ref.nodeKey} and attempt = ${ref.attempt} and status = 'running'
        returning run_id, finished_at
      ), closed as (
        update attempts set finished_at = (select finished_at from failed), outcome = ${ref.outcome}, error = ${jsonParam(error)}::jsonb
        where run_id = ${ref.runId} and node_key = ${ref.nodeKey} and n = ${ref.attempt} and exists (select 1 from failed)
      ), skipped as (
        update node_runs set status = 'skipped', finished_at = now()
        where run_id = ${ref.runId} and status = 'pending' and exists (select 1 from failed)
          and node_key in ${textList(ref.descendants)}
        returning node_key
      ), per_run as (
        select run_id, (1 + (select count(*) from skipped))::int as n, ${ref.blocking ? 1 : 0}::int as blocking from failed
      ), run as (
        ${finishRunsSql(sql`per_run`)}
      )
      select (select count(*) from failed)::int as applied,
        (select status from run) as run_status,
        (select nodes_remaining from run) as nodes_remaining`,
    );
    return row;
  });
  if (!row || Number(row.applied) === 0) return { applied: false, ready: [], runFinished: null };
  // A failed node frees no dependant: its pending descendants were skipped above.
  return { applied: true, ready: [], runFinished: row.nodes_remaining === 0 ? row.run_status : null };
}
