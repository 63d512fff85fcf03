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
import type { ReadyNode } from "../repositories/ready-node.js";
import type { Json, RunStatus } from "../types.js";
import { finishRunsSql } from "./finish-run.js";
import { lockOrder, lockRunsOf } from "./lock-order.js";
import { originalRunSql } from "./start.js";
import type { Advanced, CompleteRequest, ContinuedAttempt } from "./types.js";

interface ContinuedRow {
  runId: string;
  nodeKey: string;
  /** The completing node that started it. */
  by: string;
  flow: string;
  payload: Json;
  businessKey: string | null;
  logicalDate: string | null;
  originalRunId: string;
  queuedAt: string;
  startedAt: string;
  upstream: Record<string, Json> | null;
}

/**
 * Records many successful attempts in one statement: results stored, each dependant's
 * `deps_remaining` counted down by the number of its upstreams finishing here (fan-in decided
 * under the row lock), dependants reaching zero queued, runs counted down and finished at zero.
 * A dependant named by a request's `continueWith` that reaches zero, all of whose upstreams
 * complete in this statement, starts instead (`running`, attempt 1 under `worker`), so a chain's
 * next node needs no statement of its own.
 * The run rows are locked first, in the order of every multi-row write of a run (`lockRunsSql`),
 * so concurrent batches queue instead of deadlocking. A batch of nodes without dependants (every
 * single-node run, every run's last nodes) leaves the dependants' part out of its statement: it
 * cost each execution about as much as the rest, needed or not.
 */
export async function completeAttempts(db: Db, worker: string, requests: CompleteRequest[]): Promise<Advanced[]> {
  const input = requests.map((r) => ({
    run_id: r.runId,
    node_key: r.nodeKey,
    attempt: r.attempt,
    result: r.result,
    downstream: r.downstream,
    continue_key: r.continueWith?.nodeKey ?? null,
    continue_upstream: r.continueWith?.upstreamKeys ?? [],
    ended_at: r.endedAt,
  }));
  const leaves = requests.every((r) => r.downstream.length === 0);
  const runIds = lockOrder(requests.map((r) => r.runId));
  const shape: CompleteShape = {
    rows: sizeBucket(input.length),
    runs: sizeBucket(runIds.length),
    keys: leaves ? 0 : sizeBucket(longestOf(input.flatMap((i) => [i.downstream, i.continue_upstream]))),
  };
  const [answer] = await shapedRows<CompleteRow, CompleteShape>(db, COMPLETE, shape, {
    runs: jsonParam(runIds),
    input: jsonParam(input),
    worker,
  });
  const done = new Set((answer?.done ?? []).map((d) => `${d.run_id}/${d.node_key}`));
  const finished = new Map((answer?.runs ?? []).filter((r) => Number(r.remaining) === 0).map((r) => [r.id, r.status]));
  const readyBy = new Map<string, ReadyNode[]>();
  for (const { from, ...node } of answer?.ready ?? []) {
    // A node freed by several completions of this batch is enqueued by the first of them.
    const owner = `${node.runId}/${[...from].sort()[0]}`;
    readyBy.set(owner, [...(readyBy.get(owner) ?? []), node]);
  }
  const continuedBy = new Map((answer?.continued ?? []).map((c) => [`${c.runId}/${c.by}`, continuedAttempt(c)]));
  const finishedReported = new Set<string>();
  return requests.map((request) => {
    const key = `${request.runId}/${request.nodeKey}`;
    if (!done.has(key)) return { applied: false, ready: [], runFinished: null };
    let runFinished: RunStatus | null = null;
    if (finished.has(request.runId) && !finishedReported.has(request.runId)) {
      finishedReported.add(request.runId);
      runFinished = finished.get(request.runId)!;
    }
    return { applied: true, ready: readyBy.get(key) ?? [], runFinished, continued: continuedBy.get(key) };
  });
}

interface CompleteRow {
  done: { run_id: string; node_key: string }[] | null;
  ready: (ReadyNode & { from: string[] })[] | null;
  runs: { id: string; status: RunStatus; remaining: number }[] | null;
  continued: ContinuedRow[] | null;
}

interface CompleteShape {
  /** Size buckets of the batch and of its distinct runs. */
  rows: number;
  runs: number;
  /** Size bucket of the longest downstream or continuation list; 0 when no node of the batch has dependants. */
  keys: number;
}

const COMPLETE: ShapedStatement<CompleteShape> = { name: "complete", build: completeSql };

function completeSql({ rows, runs, keys }: CompleteShape, v: HotValue): SQL {
  const leaves = keys === 0;
  return sql`
    with locked as materialized (
      ${lockRunsOf(v("runs"), runs)}
    ), input as (
      select * from ${recordsetOf(v("input"), rows, "run_id uuid, node_key text, attempt int, result jsonb, downstream jsonb, continue_key text, continue_upstream jsonb, ended_at timestamptz")} as x
    ), done as (
      update node_runs n set status = 'success', result = i.result, error = null, finished_at = least(now(), i.ended_at)
      from input i
      where n.run_id = i.run_id and n.node_key = i.node_key and n.attempt = i.attempt and ${statusIs(sql`n.status`, "running")}
        and (select count(*) from locked) > 0
      returning n.run_id, n.node_key, n.attempt, n.finished_at
    ), closed as (
      update attempts a set finished_at = d.finished_at, outcome = 'success'
      from done d
      where a.run_id = d.run_id and a.node_key = d.node_key and a.n = d.attempt
    )${leaves ? sql`` : dependantsSql(v, keys)}, per_run as (
      select run_id, count(*)::int as n, 0 as blocking from done group by run_id
    ), run as (
      ${finishRunsSql(sql`per_run`)}
    )
    select
      (select jsonb_agg(jsonb_build_object('run_id', run_id, 'node_key', node_key)) from done) as done,
      ${leaves ? sql`null::jsonb` : readySql()} as ready,
      (select jsonb_agg(jsonb_build_object('id', id, 'status', status, 'remaining', nodes_remaining)) from run) as runs,
      ${leaves ? sql`null::jsonb` : continuedSql(keys)} as continued`;
}

/**
 * The dependants' part of a completion: each dependant's `deps_remaining` counted down by its
 * upstreams finishing here, those reaching zero queued, or started under `worker` when they are
 * the `continueWith` of a request all of whose upstreams complete in this statement.
 */
function dependantsSql(v: HotValue, keys: number): SQL {
  return sql`, edges as (
      -- A dependant starts here only if every upstream completes in this statement: this
      -- statement's snapshot predates batches it waited for at the run lock, so their results
      -- are not visible in node_runs; such a dependant is queued, and its fence reads them.
      select i.run_id, e.key, i.node_key as from_key,
        i.continue_key = e.key and not exists (
          select 1 from ${elementsUpTo(sql`i.continue_upstream`, keys)} as k(key)
          where not exists (select 1 from done f where f.run_id = i.run_id and f.node_key = k.key)) as continues
      from input i join done d on d.run_id = i.run_id and d.node_key = i.node_key
      cross join lateral ${elementsUpTo(sql`i.downstream`, keys)} as e(key)
    ), decrements as (
      select run_id, key, count(*)::int as n, jsonb_agg(from_key) as from_keys,
        min(from_key) filter (where continues) as continued_by
      from edges group by run_id, key
    ), counted as (
      update node_runs n set
        deps_remaining = n.deps_remaining - c.n,
        status = case when n.deps_remaining <> c.n then n.status when c.continued_by is null then 'queued' else 'running' end,
        attempt = case when n.deps_remaining = c.n then 1 else n.attempt end,
        queued_at = case when n.deps_remaining = c.n then now() else n.queued_at end,
        started_at = case when n.deps_remaining = c.n and c.continued_by is not null then now() else n.started_at end
      from decrements c
      where n.run_id = c.run_id and n.node_key = c.key and n.status = 'pending'
      returning n.run_id, n.node_key, n.task, n.queue, n.status, n.attempt, c.from_keys, c.continued_by
    ), continued_attempts as (
      insert into attempts (run_id, node_key, n, worker, started_at)
      select run_id, node_key, 1, ${v("worker")}, now() from counted where status = 'running'
    )`;
}

/** The dependants queued by the statement, for their jobs. */
function readySql(): SQL {
  return sql`(select jsonb_agg(jsonb_build_object('runId', c.run_id, 'nodeKey', c.node_key, 'task', c.task, 'queue', c.queue,
          'attempt', c.attempt, 'flowVersionId', r.flow_version_id, 'from', c.from_keys))
        from counted c join run r on r.id = c.run_id where c.status = 'queued')`;
}

/** The dependants the statement started (local continuation), with what their attempt needs. */
function continuedSql(keys: number): SQL {
  return sql`(select jsonb_agg(jsonb_build_object('runId', c.run_id, 'nodeKey', c.node_key, 'by', c.continued_by, 'flow', r.flow,
          'payload', r.payload, 'businessKey', r.business_key, 'logicalDate', r.logical_date,
          'originalRunId', ${originalRunSql(sql`r`)}, 'queuedAt', now(), 'startedAt', now(),
          'upstream', (
            -- Every upstream completed in this statement (see edges): their results are in the input.
            select jsonb_object_agg(k.key, fresh.result)
            from input ci
            cross join lateral ${elementsUpTo(sql`ci.continue_upstream`, keys)} as k(key)
            join input fresh on fresh.run_id = c.run_id and fresh.node_key = k.key
            where ci.run_id = c.run_id and ci.node_key = c.continued_by)))
        from counted c join runs r on r.id = c.run_id where c.status = 'running')`;
}

function continuedAttempt(c: ContinuedRow): ContinuedAttempt {
  return {
    nodeKey: c.nodeKey,
    attempt: 1,
    flow: c.flow,
    payload: c.payload,
    businessKey: c.businessKey,
    logicalDate: c.logicalDate === null ? null : new Date(c.logicalDate).toISOString(),
    originalRunId: c.originalRunId,
    queuedAt: new Date(c.queuedAt),
    startedAt: new Date(c.startedAt),
    runStarted: false,
    upstream: c.upstream ?? {},
  };
}
