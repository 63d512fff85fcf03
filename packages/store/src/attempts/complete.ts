import { sql } from "drizzle-orm";
import type { Db } from "../connect.js";
import { hotRows, recordset } from "../repositories/raw.js";
import type { ReadyNode } from "../repositories/ready-node.js";
import type { RunStatus } from "../types.js";
import { finishRunsSql } from "./finish-run.js";
import { lockRunsSql } from "./lock-order.js";
import type { Advanced, CompleteRequest } from "./types.js";

/**
 * Records many successful attempts in one statement: results stored, each dependant's
 * `deps_remaining` counted down by the number of its upstreams finishing here (fan-in decided
 * under the row lock), dependants reaching zero queued, runs counted down and finished at zero.
 * The run rows are locked first, in the order of every multi-row write of a run (`lockRunsSql`),
 * so concurrent batches queue instead of deadlocking.
 */
export async function completeAttempts(db: Db, requests: CompleteRequest[]): Promise<Advanced[]> {
  const input = requests.map((r) => ({
    run_id: r.runId,
    node_key: r.nodeKey,
    attempt: r.attempt,
    result: r.result,
    downstream: r.downstream,
  }));
  const [answer] = await hotRows<{
    done: { run_id: string; node_key: string }[] | null;
    ready: (ReadyNode & { from: string[] })[] | null;
    runs: { id: string; status: RunStatus; remaining: number }[] | null;
  }>(
    db,
    sql`
    with locked as materialized (
      ${lockRunsSql(requests.map((r) => r.runId))}
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
      select run_id, count(*)::int as n, 0 as blocking from done group by run_id
    ), run as (
      ${finishRunsSql(sql`per_run`)}
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
