import { sql } from "drizzle-orm";
import type { Db } from "../connect.js";
import { rows } from "../repositories/raw.js";
import type { AttemptRef } from "./types.js";

/**
 * Records again the start of an attempt that ran to its end but whose start PostgreSQL lost: a
 * start commits without waiting for the disk, so after a crash the node can be back to
 * `queued`/`retrying` at this very attempt, with no row for it. The closing write then matches
 * nothing, and without this the attempt's work would be dropped and the same attempt number run
 * again elsewhere. It is the same conditional update as the fence (this node, this attempt, not
 * started), so it cannot take a node that was cancelled, failed over to a next attempt, or
 * started by another worker since. `startedAt` is when the attempt really started. Answers
 * whether the start is recorded again; the caller then repeats its closing write.
 */
export async function reclaimLostStart(db: Db, ref: AttemptRef & { worker: string; startedAt: Date }): Promise<boolean> {
  const startedAt = ref.startedAt.toISOString();
  const [row] = await rows<{ reclaimed: number }>(
    db,
    sql`
    with started as (
      update node_runs set status = 'running', started_at = coalesce(started_at, ${startedAt}::timestamptz), next_retry_at = null
      where run_id = ${ref.runId} and node_key = ${ref.nodeKey} and attempt = ${ref.attempt} and status in ('queued', 'retrying')
        and not exists (select 1 from attempts a where a.run_id = ${ref.runId} and a.node_key = ${ref.nodeKey} and a.n = ${ref.attempt})
      returning run_id
    ), recorded as (
      insert into attempts (run_id, node_key, n, worker, started_at)
      select ${ref.runId}, ${ref.nodeKey}, ${ref.attempt}, ${ref.worker}, ${startedAt}::timestamptz from started
    ), run_started as (
      update runs set status = 'running', started_at = coalesce(started_at, ${startedAt}::timestamptz)
      where id = ${ref.runId} and status = 'pending' and exists (select 1 from started)
    )
    select count(*)::int as reclaimed from started`,
  );
  return Number(row?.reclaimed ?? 0) > 0;
}
