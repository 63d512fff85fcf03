import { sql } from "drizzle-orm";
import type { Db } from "../connect.js";
import type { Json, RunStatus } from "../types.js";
import type { AttemptRef, StartedAttempt } from "./attempt-lifecycle.js";
import { recordset, rows, uuidList } from "./raw.js";
import type { ReadyNode } from "./ready-node.js";

/**
 * Batched forms of the attempt fence and of the advance, so that many attempts finishing at once
 * share one statement and one commit (group commit) instead of paying a commit each.
 */

export interface StartRequest extends AttemptRef {
  upstreamKeys: string[];
}

/**
 * The fence for many attempts at once: each node moves from `queued`/`retrying` to `running` for
 * exactly its attempt, and the attempt is recorded. Undefined in the answer means that job is a
 * duplicate or stale. A run moves `pending` -> `running` with its first start; that step skips
 * a run row another transaction holds, so concurrent starters never wait on each other.
 *
 * Idempotent for its worker: an attempt already `running` under `worker` (and not given up)
 * is answered as started again, because a start whose reply was lost is retried and must not
 * lose to itself. The caller makes sure it is not executing that attempt already. Answers are
 * matched by attempt, so a stale job for attempt N never takes the answer of attempt N+1.
 *
 * Pass `store.relaxed`: it is safe not to wait for the disk here. If a crash loses this commit,
 * the node is `queued` again with no attempt, the worker's completion fails its fence, and the
 * reconciler requeues the node (at-least-once holds). WAL is flushed in order, so any later
 * durable commit, such as this attempt's completion, makes this one durable too.
 */
export async function startAttempts(db: Db, worker: string, requests: StartRequest[]): Promise<(StartedAttempt | undefined)[]> {
  const input = requests.map((r) => ({ run_id: r.runId, node_key: r.nodeKey, attempt: r.attempt, upstream: r.upstreamKeys }));
  const found = await startStatement(db, worker, input);
  const byAttempt = new Map(found.map((row) => [`${row.run_id}/${row.node_key}/${row.attempt}`, row]));
  return requests.map((request) => {
    const row = byAttempt.get(`${request.runId}/${request.nodeKey}/${request.attempt}`);
    if (!row) return undefined;
    return {
      flow: row.flow,
      payload: row.payload,
      businessKey: row.business_key,
      logicalDate: row.logical_date === null ? null : new Date(row.logical_date).toISOString(),
      // Raw statements bypass drizzle's column mapping: PGlite answers timestamps as text.
      queuedAt: row.queued_at === null ? null : new Date(row.queued_at),
      startedAt: new Date(row.started_at),
      runStarted: row.run_started,
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
  queued_at: Date | string | null;
  started_at: Date | string;
  run_started: boolean;
  upstream: Record<string, Json> | null;
}

type StartInput = { run_id: string; node_key: string; attempt: number; upstream: string[] }[];

function startStatement(db: Db, worker: string, input: StartInput): Promise<StartRow[]> {
  return rows<StartRow>(
    db,
    sql`
    with input as (
      select * from ${recordset(input, "run_id uuid, node_key text, attempt int, upstream jsonb")} as x
    ), started as (
      update node_runs n set status = 'running', started_at = coalesce(n.started_at, now()), next_retry_at = null
      from input i
      where n.run_id = i.run_id and n.node_key = i.node_key and n.attempt = i.attempt and n.status in ('queued', 'retrying')
      returning n.run_id, n.node_key, n.attempt, n.queued_at, now() as started_at
    ), recorded as (
      insert into attempts (run_id, node_key, n, worker, started_at)
      select run_id, node_key, attempt, ${worker}, now() from started
    ), resumed as (
      select n.run_id, n.node_key, n.attempt, n.queued_at, a.started_at
      from input i
      join node_runs n on n.run_id = i.run_id and n.node_key = i.node_key and n.attempt = i.attempt and n.status = 'running'
      join attempts a on a.run_id = n.run_id and a.node_key = n.node_key and a.n = n.attempt
      where a.worker = ${worker} and a.finished_at is null and a.abandoned_at is null
    ), answered as (
      select * from started union all select * from resumed
    ), run_started as (
      update runs set status = 'running', started_at = now()
      where id in (
        select id from runs where id in (select run_id from started) and status = 'pending'
        for update skip locked)
      returning id
    )
    select s.run_id, s.node_key, s.attempt, r.flow, r.payload, r.business_key, r.logical_date, s.queued_at, s.started_at,
      exists (select 1 from run_started rs where rs.id = s.run_id) as run_started,
      (select jsonb_object_agg(u.node_key, u.result) from input i, node_runs u
        where i.run_id = s.run_id and i.node_key = s.node_key and i.attempt = s.attempt and u.run_id = s.run_id
          and u.node_key in (select jsonb_array_elements_text(i.upstream))) as upstream
    from answered s join runs r on r.id = s.run_id`,
  );
}

export interface CompleteRequest extends AttemptRef {
  result: Json;
  downstream: string[];
}

export interface Completed {
  /** False when the fence matched nothing: the attempt was closed elsewhere (cancel, takeover). */
  applied: boolean;
  /** Dependants this completion made ready (each reported once, to the completion that freed it). */
  ready: ReadyNode[];
  /** The run's status when this batch made it terminal. */
  runFinished: RunStatus | null;
}

/**
 * Records many successful attempts in one statement: results stored, each dependant's
 * `deps_remaining` counted down by the number of its upstreams finishing here (fan-in decided
 * under the row lock), dependants reaching zero queued, runs counted down and finished at zero.
 * The run rows are locked first, in id order (`locked`: every row change below waits on its
 * count, an uncorrelated subquery run once before the first node row is touched; a count, not
 * EXISTS, because a CTE is read lazily and EXISTS would lock only the first run), the order
 * `lockRuns` gives every multi-row write of a run, so concurrent batches queue instead of
 * deadlocking.
 */
export async function completeAttempts(db: Db, requests: CompleteRequest[]): Promise<Completed[]> {
  const input = requests.map((r) => ({
    run_id: r.runId,
    node_key: r.nodeKey,
    attempt: r.attempt,
    result: r.result,
    downstream: r.downstream,
  }));
  const runIds = [...new Set(requests.map((r) => r.runId))].sort();
  const [answer] = await rows<{
    done: { run_id: string; node_key: string }[] | null;
    ready: (ReadyNode & { from: string[] })[] | null;
    runs: { id: string; status: RunStatus; remaining: number }[] | null;
  }>(
    db,
    sql`
    with locked as materialized (
      select id from runs where id in ${uuidList(runIds)}
      order by id for update
    ), input as (
      select * from ${recordset(input, "run_id uuid, node_key text, attempt int, result jsonb, downstream jsonb")} as x
    ), done as (
      update node_runs n set status = 'success', result = i.result, error = null, finished_at = now()
      from input i
      where n.run_id = i.run_id and n.node_key = i.node_key and n.attempt = i.attempt and n.status = 'running'
        and (select count(*) from locked) > 0
      returning n.run_id, n.node_key, n.attempt
    ), closed as (
      update attempts a set finished_at = now(), outcome = 'success'
      from done d
      where a.run_id = d.run_id and a.node_key = d.node_key and a.n = d.attempt
    ), edges as (
      select i.run_id, jsonb_array_elements_text(i.downstream) as key, i.node_key as from_key
      from input i join done d on d.run_id = i.run_id and d.node_key = i.node_key
    ), decrements as (
      select run_id, key, count(*)::int as n, jsonb_agg(from_key) as from_keys from edges group by run_id, key
    ), counted as (
      update node_runs n set
        deps_remaining = n.deps_remaining - c.n,
        status = case when n.deps_remaining = c.n then 'queued' else n.status end,
        attempt = case when n.deps_remaining = c.n then 1 else n.attempt end,
        queued_at = case when n.deps_remaining = c.n then now() else n.queued_at end
      from decrements c
      where n.run_id = c.run_id and n.node_key = c.key and n.status = 'pending'
      returning n.run_id, n.node_key, n.task, n.queue, n.status, n.attempt, c.from_keys
    ), per_run as (
      select run_id, count(*)::int as n from done group by run_id
    ), run as (
      update runs r set
        nodes_remaining = r.nodes_remaining - p.n,
        status = case when r.nodes_remaining - p.n = 0 and r.status in ('pending', 'running')
          then (case when r.blocking_failures > 0 then 'failed' else 'success' end) else r.status end,
        finished_at = case when r.nodes_remaining - p.n = 0 then now() else r.finished_at end
      from per_run p
      where r.id = p.run_id
      returning r.id, r.status, r.nodes_remaining, r.flow_version_id
    )
    select
      (select jsonb_agg(jsonb_build_object('run_id', run_id, 'node_key', node_key)) from done) as done,
      (select jsonb_agg(jsonb_build_object('runId', c.run_id, 'nodeKey', c.node_key, 'task', c.task, 'queue', c.queue,
          'attempt', c.attempt, 'flowVersionId', r.flow_version_id, 'from', c.from_keys))
        from counted c join run r on r.id = c.run_id where c.status = 'queued') as ready,
      (select jsonb_agg(jsonb_build_object('id', id, 'status', status, 'remaining', nodes_remaining)) from run) as runs`,
  );
  const done = new Set((answer?.done ?? []).map((d) => `${d.run_id}/${d.node_key}`));
  const finished = new Map((answer?.runs ?? []).filter((r) => Number(r.remaining) === 0).map((r) => [r.id, r.status]));
  const readyBy = new Map<string, ReadyNode[]>();
  for (const { from, ...node } of answer?.ready ?? []) {
    // A node freed by several completions of this batch is enqueued by the first of them.
    const owner = `${node.runId}/${[...from].sort()[0]}`;
    readyBy.set(owner, [...(readyBy.get(owner) ?? []), node]);
  }
  const finishedReported = new Set<string>();
  return requests.map((request) => {
    const key = `${request.runId}/${request.nodeKey}`;
    if (!done.has(key)) return { applied: false, ready: [], runFinished: null };
    let runFinished: RunStatus | null = null;
    if (finished.has(request.runId) && !finishedReported.has(request.runId)) {
      finishedReported.add(request.runId);
      runFinished = finished.get(request.runId)!;
    }
    return { applied: true, ready: readyBy.get(key) ?? [], runFinished };
  });
}
