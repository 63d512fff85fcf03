import { sql } from "drizzle-orm";
import type { Db } from "../connect.js";
import { jsonParam, recordset, rows } from "../repositories/raw.js";
import type { Json } from "../types.js";
import type { AttemptRef, RunningAttempt, WaitingNode } from "./types.js";

/** What a job that lost the fence finds: used to tell a duplicate from a crashed attempt. */
export async function inspectAttempt(db: Db, ref: AttemptRef, leaseMs: number): Promise<RunningAttempt | undefined> {
  const lease = sql`make_interval(secs => ${leaseMs / 1000})`;
  const [row] = await rows<{
    flow: string;
    business_key: string | null;
    status: string;
    attempt: number;
    worker: string | null;
    worker_lost: boolean;
    abandoned: boolean;
    lease_left_ms: number | null;
    running_ms: number | null;
  }>(
    db,
    sql`
    select r.flow, r.business_key, n.status, n.attempt, a.worker,
      (w.id is null or w.heartbeat_at < now() - ${lease} or a.abandoned_at is not null) as worker_lost,
      a.abandoned_at is not null as abandoned,
      greatest(0, extract(epoch from (w.heartbeat_at + ${lease} - now())) * 1000)::float8 as lease_left_ms,
      greatest(0, extract(epoch from (now() - a.started_at)) * 1000)::float8 as running_ms
    from node_runs n
    join runs r on r.id = n.run_id
    left join attempts a on a.run_id = n.run_id and a.node_key = n.node_key and a.n = n.attempt
    left join workers w on w.id = a.worker
    where n.run_id = ${ref.runId} and n.node_key = ${ref.nodeKey}`,
  );
  if (!row) return undefined;
  return {
    flow: row.flow,
    businessKey: row.business_key,
    status: row.status,
    attempt: row.attempt,
    worker: row.worker,
    workerLost: row.worker_lost,
    abandoned: row.abandoned,
    leaseLeftMs: row.worker_lost ? 0 : Math.ceil(Number(row.lease_left_ms ?? 0)),
    runningMs: row.running_ms === null ? null : Math.round(Number(row.running_ms)),
  };
}

/**
 * A failed run's first failed node (by when it failed) whose failure fails the run, and its error:
 * what the `run_failed` event names. A `notify_only` node that failed earlier did not fail the run.
 */
export async function firstFailedNode(
  db: Db,
  runId: string,
): Promise<{ nodeKey: string; error: { name: string; message: string } } | undefined> {
  const [row] = await rows<{ node_key: string; name: string | null; message: string | null }>(
    db,
    sql`select node_key, error->>'name' as name, error->>'message' as message from node_runs
        where run_id = ${runId} and status = 'failed' order by error ? 'notifyOnly', finished_at, node_key limit 1`,
  );
  return row && { nodeKey: row.node_key, error: { name: row.name ?? "Error", message: row.message ?? "" } };
}

/**
 * How many of a node's attempts so far ended because their worker died (`crashed`, leaving out
 * attempts a stopping worker handed back): a crash is followed by a new attempt whatever the
 * task's `retries`, but only so many times.
 */
export async function crashedAttempts(db: Db, ref: { runId: string; nodeKey: string }): Promise<number> {
  const [row] = await rows<{ n: number }>(
    db,
    sql`select count(*)::int as n from attempts where run_id = ${ref.runId} and node_key = ${ref.nodeKey}
        and outcome = 'crashed' and coalesce(error->>'name', '') <> 'AxWorkerStoppedError'`,
  );
  return Number(row?.n ?? 0);
}

/**
 * The node's attempts before `attempt` that its workers handed back (a graceful stop past its
 * timeout, an outcome lost with PostgreSQL): the task did not fail, so they charge no retry.
 */
export async function unchargedAttempts(db: Db, ref: { runId: string; nodeKey: string; attempt: number }): Promise<number> {
  const [row] = await rows<{ n: number }>(
    db,
    sql`select count(*)::int as n from attempts where run_id = ${ref.runId} and node_key = ${ref.nodeKey} and n < ${ref.attempt}
        and outcome = 'crashed' and error->>'name' in ('AxWorkerStoppedError', 'AxOutcomeLostError')`,
  );
  return Number(row?.n ?? 0);
}

/** Stores a running attempt's reported progress on its node. */
export async function recordProgress(db: Db, ref: AttemptRef & { progress: Json }): Promise<void> {
  await db.execute(sql`
    update node_runs set progress = ${jsonParam(ref.progress)}::jsonb
    where run_id = ${ref.runId} and node_key = ${ref.nodeKey} and attempt = ${ref.attempt} and status = 'running'`);
}

/** How long a node has been waiting for a worker to start this attempt. */
export async function nodeWaiting(db: Db, ref: AttemptRef): Promise<WaitingNode | undefined> {
  const [row] = await rows<{ waiting: boolean; due_for_ms: number | null }>(
    db,
    sql`
    select n.status in ('queued', 'retrying') and n.attempt = ${ref.attempt} as waiting,
      extract(epoch from now() - greatest(n.queued_at, n.next_retry_at)) * 1000 as due_for_ms
    from node_runs n
    where n.run_id = ${ref.runId} and n.node_key = ${ref.nodeKey}`,
  );
  if (!row) return undefined;
  return { waiting: row.waiting, dueForMs: Math.max(0, Number(row.due_for_ms ?? 0)) };
}

/**
 * The attempts PostgreSQL records as running under `worker`, started at least `minAgeMs` ago. One
 * the worker gave up (`abandoned_at`) is left out: the fence closes it, charging a retry, when the
 * reconciler brings its job back; handed back here it would run again for free.
 */
export async function runningAttemptsOf(db: Db, worker: string, minAgeMs: number): Promise<AttemptRef[]> {
  const found = await rows<{ run_id: string; node_key: string; n: number }>(
    db,
    sql`
    select a.run_id, a.node_key, a.n
    from attempts a
    join node_runs n on n.run_id = a.run_id and n.node_key = a.node_key and n.attempt = a.n
    where a.worker = ${worker} and a.finished_at is null and a.abandoned_at is null and n.status = 'running'
      and a.started_at < now() - make_interval(secs => ${minAgeMs / 1000})`,
  );
  return found.map((r) => ({ runId: r.run_id, nodeKey: r.node_key, attempt: r.n }));
}

/**
 * Of `refs`, attempts this process executes, those something else closed as `crashed`: a
 * takeover after this worker's lease lapsed. A worker's own hand-back on stop is left out.
 */
export async function takenOverAttempts(db: Db, refs: AttemptRef[]): Promise<AttemptRef[]> {
  if (refs.length === 0) return [];
  const input = refs.map((r) => ({ run_id: r.runId, node_key: r.nodeKey, n: r.attempt }));
  const found = await rows<{ run_id: string; node_key: string; n: number }>(
    db,
    sql`
    select a.run_id, a.node_key, a.n
    from ${recordset(input, "run_id uuid, node_key text, n int")} as x
    join attempts a on a.run_id = x.run_id and a.node_key = x.node_key and a.n = x.n
    where a.outcome = 'crashed' and coalesce(a.error->>'name', '') <> 'AxWorkerStoppedError'`,
  );
  return found.map((r) => ({ runId: r.run_id, nodeKey: r.node_key, attempt: r.n }));
}
