import { sql } from "drizzle-orm";
import type { Db } from "../connect.js";
import { jsonParam, rows } from "../repositories/raw.js";
import type { AttemptOutcome, TaskFailure } from "../types.js";
import type { AttemptEnd, AttemptRef } from "./types.js";

/**
 * Closes a failed attempt and schedules the next one `delayMs` from now by PostgreSQL's clock,
 * the one the reconciler compares it with; the caller enqueues the job with the same delay. The
 * node counts as queued from then (`queued_at`), so the backoff is not taken for queue wait.
 * Answers when the next attempt is due, or undefined when the write matched nothing.
 */
export async function retryAttempt(
  db: Db,
  ref: AttemptRef & AttemptEnd & { outcome: AttemptOutcome; error: TaskFailure; delayMs: number },
): Promise<Date | undefined> {
  const [row] = await rows<{ next_retry_at: Date | string }>(
    db,
    sql`
    with waiting as (
      update node_runs set status = 'retrying', attempt = attempt + 1, error = ${jsonParam(ref.error)}::jsonb,
        next_retry_at = now() + make_interval(secs => ${ref.delayMs / 1000}),
        queued_at = now() + make_interval(secs => ${ref.delayMs / 1000})
      where run_id = ${ref.runId} and node_key = ${ref.nodeKey} and attempt = ${ref.attempt} and status = 'running'
      returning run_id, next_retry_at
    ), closed as (
      update attempts set finished_at = least(now(), ${ref.endedAt?.toISOString() ?? null}::timestamptz), outcome = ${ref.outcome}, error = ${jsonParam(ref.error)}::jsonb
      where run_id = ${ref.runId} and node_key = ${ref.nodeKey} and n = ${ref.attempt} and exists (select 1 from waiting)
    )
    select next_retry_at from waiting`,
  );
  // PGlite answers timestamps as text.
  return row ? new Date(row.next_retry_at) : undefined;
}
