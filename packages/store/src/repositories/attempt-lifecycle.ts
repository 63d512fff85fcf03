import { sql } from "drizzle-orm";
import type { Db } from "../connect.js";
import type { AttemptOutcome, Json, RunStatus, TaskFailure } from "../types.js";
import { lockRuns } from "./lock-runs.js";
import { jsonParam, rows, textList } from "./raw.js";
import type { ReadyNode } from "./ready-node.js";

export interface AttemptRef {
  runId: string;
  nodeKey: string;
  attempt: number;
}

export interface StartedAttempt {
  flow: string;
  payload: Json;
  businessKey: string | null;
  /** The run's schedule tick (ISO), null for runs not triggered by a schedule. */
  logicalDate: string | null;
  queuedAt: Date | null;
  startedAt: Date;
  /** True when this attempt moved the run from `pending` to `running`. */
  runStarted: boolean;
  /** Results of the upstream nodes asked for, by node key. */
  upstream: Record<string, Json>;
}

export interface Advanced {
  /** False when the fence matched nothing: the attempt was already closed elsewhere. */
  applied: boolean;
  ready: ReadyNode[];
  /** The run's status after this change, when it just became terminal. */
  runFinished: RunStatus | null;
}

type AdvanceRow = {
  applied: number;
  ready: Omit<ReadyNode, "flowVersionId">[] | null;
  run_status: RunStatus | null;
  nodes_remaining: number | null;
  flow_version_id: number | null;
};

function toAdvanced(row: AdvanceRow | undefined): Advanced {
  if (!row || Number(row.applied) === 0) return { applied: false, ready: [], runFinished: null };
  const flowVersionId = row.flow_version_id ?? 0;
  return {
    applied: true,
    ready: (row.ready ?? []).map((r) => ({ ...r, flowVersionId })),
    runFinished: row.nodes_remaining === 0 ? row.run_status : null,
  };
}

/** The `runs` update shared by every node that becomes terminal: count down, finish at zero. */
function finishRunSql(runId: string, terminalNodes: SQLChunk, blocking: boolean) {
  return sql`
    update runs set
      nodes_remaining = nodes_remaining - ${terminalNodes},
      blocking_failures = blocking_failures + ${blocking ? 1 : 0},
      status = case when nodes_remaining - ${terminalNodes} = 0 and status in ('pending', 'running')
        then (case when blocking_failures + ${blocking ? 1 : 0} > 0 then 'failed' else 'success' end)
        else status end,
      finished_at = case when nodes_remaining - ${terminalNodes} = 0 then now() else finished_at end
    where id = ${runId}`;
}
type SQLChunk = ReturnType<typeof sql>;

/**
 * Closes a failed attempt and schedules the next one `delayMs` from now by PostgreSQL's clock,
 * the one the reconciler compares it with; the caller enqueues the job with the same delay.
 */
export async function retryAttempt(
  db: Db,
  ref: AttemptRef & { outcome: AttemptOutcome; error: TaskFailure; delayMs: number },
): Promise<boolean> {
  const [row] = await rows<{ applied: number }>(
    db,
    sql`
    with waiting as (
      update node_runs set status = 'retrying', attempt = attempt + 1, error = ${jsonParam(ref.error)}::jsonb,
        next_retry_at = now() + make_interval(secs => ${ref.delayMs / 1000}), queued_at = now()
      where run_id = ${ref.runId} and node_key = ${ref.nodeKey} and attempt = ${ref.attempt} and status = 'running'
      returning run_id
    ), closed as (
      update attempts set finished_at = now(), outcome = ${ref.outcome}, error = ${jsonParam(ref.error)}::jsonb
      where run_id = ${ref.runId} and node_key = ${ref.nodeKey} and n = ${ref.attempt} and exists (select 1 from waiting)
    )
    select count(*)::int as applied from waiting`,
  );
  return Number(row?.applied ?? 0) > 0;
}

/**
 * Fails the node for good: its pending descendants become `skipped`, and the run counts them all
 * down; `blocking` (onFailure "fail") makes the run's outcome `failed`.
 */
export async function failNode(
  db: Db,
  ref: AttemptRef & { outcome: AttemptOutcome; error: TaskFailure; descendants: string[]; blocking: boolean },
): Promise<Advanced> {
  const row = await db.transaction(async (tx) => {
    await lockRuns(tx, [ref.runId]);
    const [row] = await rows<AdvanceRow>(
      tx,
      sql`
      with failed as (
        update node_runs set status = 'failed', error = ${jsonParam(ref.error)}::jsonb, finished_at = now()
        where run_id = ${ref.runId} and node_key = ${ref.nodeKey} and attempt = ${ref.attempt} and status = 'running'
        returning run_id
      ), closed as (
        update attempts set finished_at = now(), outcome = ${ref.outcome}, error = ${jsonParam(ref.error)}::jsonb
        where run_id = ${ref.runId} and node_key = ${ref.nodeKey} and n = ${ref.attempt} and exists (select 1 from failed)
      ), skipped as (
        update node_runs set status = 'skipped', finished_at = now()
        where run_id = ${ref.runId} and status = 'pending' and exists (select 1 from failed)
          and node_key in ${textList(ref.descendants)}
        returning node_key
      ), run as (
        ${finishRunSql(ref.runId, sql`(1 + (select count(*) from skipped))::int`, ref.blocking)} and exists (select 1 from failed)
        returning status, nodes_remaining, flow_version_id
      )
      select (select count(*) from failed)::int as applied, null::jsonb as ready,
        (select status from run) as run_status,
        (select nodes_remaining from run) as nodes_remaining,
        (select flow_version_id from run) as flow_version_id`,
    );
    return row;
  });
  return toAdvanced(row);
}

export interface RunningAttempt {
  flow: string;
  businessKey: string | null;
  status: string;
  attempt: number;
  worker: string | null;
  /** True when the attempt's worker has not heartbeated within the lease (or is unknown), or gave the attempt up. */
  workerLost: boolean;
  /** True when its worker could not record the outcome and gave the attempt up. */
  abandoned: boolean;
  /** How long until the worker's lease lapses unless it heartbeats again; 0 once lost. */
  leaseLeftMs: number;
}

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
  }>(
    db,
    sql`
    select r.flow, r.business_key, n.status, n.attempt, a.worker,
      (w.id is null or w.heartbeat_at < now() - ${lease} or a.abandoned_at is not null) as worker_lost,
      a.abandoned_at is not null as abandoned,
      greatest(0, extract(epoch from (w.heartbeat_at + ${lease} - now())) * 1000)::float8 as lease_left_ms
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
  };
}

/** Stores a running attempt's reported progress on its node. */
export async function recordProgress(db: Db, ref: AttemptRef & { progress: Json }): Promise<void> {
  await db.execute(sql`
    update node_runs set progress = ${jsonParam(ref.progress)}::jsonb
    where run_id = ${ref.runId} and node_key = ${ref.nodeKey} and attempt = ${ref.attempt} and status = 'running'`);
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

export interface WaitingNode {
  /** True when the node waits for exactly this attempt to start (`queued`, or `retrying` for it). */
  waiting: boolean;
  /** How long it has been due to start, by PostgreSQL's clock: since queued, or since its retry fell due. */
  dueForMs: number;
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
