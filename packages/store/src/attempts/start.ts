import { sql, type SQL } from "drizzle-orm";
import type { Db } from "../connect.js";
import {
  elementsUpTo,
  jsonParam,
  longestOf,
  recordsetOf,
  shapedRows,
  sizeBucket,
  statusIs,
  type HotValue,
  type ShapedStatement,
} from "../repositories/raw.js";
import type { Json } from "../types.js";
import type { StartedAttempt, StartRequest } from "./types.js";

/**
 * The fence for many attempts at once: each node moves from `queued`/`retrying` to `running` for
 * exactly its attempt, and the attempt is recorded. Undefined in the answer means that job is a
 * duplicate or stale. A run moves `pending` -> `running` with its first start; that step skips
 * a run row another transaction holds, so concurrent starters never wait on each other.
 *
 * Idempotent for its worker when asked (`resume`): an attempt already `running` under `worker`
 * (and not given up) is answered as started again, because a start whose reply was lost is
 * retried and must not lose to itself. The caller makes sure it is not executing that attempt
 * already. Answers are matched by attempt, so a stale job for attempt N never takes the answer
 * of attempt N+1. The parts a batch does not need (resuming, upstream results for nodes that
 * have none) are left out of its statement: each costs every execution, needed or not.
 *
 * Pass `store.relaxed`: it is safe not to wait for the disk here. If a crash loses this commit,
 * the node is `queued` again with no attempt, the worker's completion fails its fence, and the
 * reconciler requeues the node (at-least-once holds). WAL is flushed in order, so any later
 * durable commit, such as this attempt's completion, makes this one durable too.
 */
export async function startAttempts(db: Db, worker: string, requests: StartRequest[]): Promise<(StartedAttempt | undefined)[]> {
  const input = requests.map((r) => ({ run_id: r.runId, node_key: r.nodeKey, attempt: r.attempt, upstream: r.upstreamKeys }));
  const found = await startStatement(
    db,
    worker,
    input,
    requests.some((r) => r.resume),
  );
  const byAttempt = new Map(found.map((row) => [`${row.run_id}/${row.node_key}/${row.attempt}`, row]));
  // Every row of a run that this statement moved to `running` says so; only one of its attempts
  // may announce it, or two roots starting in one batch raise run_started twice.
  const announced = new Set<string>();
  return requests.map((request) => {
    const row = byAttempt.get(`${request.runId}/${request.nodeKey}/${request.attempt}`);
    if (!row) return undefined;
    const runStarted = row.run_started && !announced.has(row.run_id);
    if (runStarted) announced.add(row.run_id);
    return {
      flow: row.flow,
      payload: row.payload,
      businessKey: row.business_key,
      logicalDate: row.logical_date === null ? null : new Date(row.logical_date).toISOString(),
      originalRunId: row.original_run_id,
      // Raw statements bypass drizzle's column mapping: PGlite answers timestamps as text.
      queuedAt: row.queued_at === null ? null : new Date(row.queued_at),
      startedAt: new Date(row.started_at),
      runStarted,
      upstream: row.upstream ?? {},
    };
  });
}

interface StartRow {
  run_id: string;
  node_key: string;
  attempt: number;
  flow: string;
  payload: Json;
  business_key: string | null;
  logical_date: Date | string | null;
  original_run_id: string;
  queued_at: Date | string | null;
  started_at: Date | string;
  run_started: boolean;
  upstream: Record<string, Json> | null;
}

type StartInput = { run_id: string; node_key: string; attempt: number; upstream: string[] }[];

interface StartShape {
  /** Size bucket of the batch. */
  rows: number;
  resume: boolean;
  /** Size bucket of the longest upstream list; 0 when no node of the batch has upstream. */
  upstream: number;
}

function startStatement(db: Db, worker: string, input: StartInput, resume: boolean): Promise<StartRow[]> {
  const hasUpstream = input.some((i) => i.upstream.length > 0);
  const shape: StartShape = {
    rows: sizeBucket(input.length),
    resume,
    upstream: hasUpstream ? sizeBucket(longestOf(input.map((i) => i.upstream))) : 0,
  };
  return shapedRows<StartRow, StartShape>(db, START, shape, { input: jsonParam(input), worker });
}

const START: ShapedStatement<StartShape> = { name: "start", build: startSql };

function startSql({ rows, resume, upstream: upstreamBound }: StartShape, v: HotValue): SQL {
  const resumed = resume
    ? sql`, resumed as (
      select n.run_id, n.node_key, n.attempt, n.queued_at, a.started_at
      from input i
      join node_runs n on n.run_id = i.run_id and n.node_key = i.node_key and n.attempt = i.attempt and ${statusIs(sql`n.status`, "running")}
      join attempts a on a.run_id = n.run_id and a.node_key = n.node_key and a.n = n.attempt
      where a.worker = ${v("worker")} and a.finished_at is null and a.abandoned_at is null
    ), answered as (
      select * from started union all select * from resumed
    )`
    : sql`, answered as (select * from started)`;
  const upstream =
    upstreamBound > 0
      ? sql`(select jsonb_object_agg(u.node_key, u.result) from input i, node_runs u
        where i.run_id = s.run_id and i.node_key = s.node_key and i.attempt = s.attempt and u.run_id = s.run_id
          and u.node_key in ${elementsUpTo(sql`i.upstream`, upstreamBound)})`
      : sql`null::jsonb`;
  return sql`
    with input as (
      select * from ${recordsetOf(v("input"), rows, "run_id uuid, node_key text, attempt int, upstream jsonb")} as x
    ), started as (
      update node_runs n set status = 'running', started_at = coalesce(n.started_at, now()), next_retry_at = null
      from input i
      where n.run_id = i.run_id and n.node_key = i.node_key and n.attempt = i.attempt and ${statusIs(sql`n.status`, "queued", "retrying")}
      returning n.run_id, n.node_key, n.attempt, n.queued_at, now() as started_at
    ), recorded as (
      insert into attempts (run_id, node_key, n, worker, started_at)
      select run_id, node_key, attempt, ${v("worker")}, now() from started
    )${resumed}, run_started as (
      update runs set status = 'running', started_at = now()
      where id in (
        select id from runs where id in (select run_id from started) and ${statusIs(sql`status`, "pending")}
        for update skip locked)
      returning id
    )
    select s.run_id, s.node_key, s.attempt, r.flow, r.payload, r.business_key, r.logical_date, ${originalRunSql(sql`r`)} as original_run_id,
      s.queued_at, s.started_at,
      exists (select 1 from run_started rs where rs.id = s.run_id) as run_started, ${upstream} as upstream
    from answered s join runs r on r.id = s.run_id`;
}

/**
 * The first run of the chain of reruns `run` (a `runs` row) belongs to: its own id, or the root
 * a rerun was written with (which stays when retention prunes runs of the chain).
 */
export function originalRunSql(run: SQL): SQL {
  return sql`coalesce(${run}.rerun_root, ${run}.id)`;
}
