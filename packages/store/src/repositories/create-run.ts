import { sql } from "drizzle-orm";
import type { Db } from "../connect.js";
import type { FlowVersion } from "./flow-definitions.js";
import { recordset, rows } from "./raw.js";
import type { Json, RunTrigger } from "../types.js";
import type { ReadyNode } from "./ready-node.js";

export interface NewRun {
  id: string;
  flow: FlowVersion;
  trigger: RunTrigger;
  payload: Json;
  businessKey?: string | null | undefined;
  idempotencyKey?: string | null | undefined;
  logicalDate?: Date | null | undefined;
  rerunOf?: string | null | undefined;
  /** BullMQ priority for every job of the run (1 = highest). */
  priority?: number | null | undefined;
  /** The first nodes are due then (delayed jobs); until then the run stays `pending`. */
  runAt?: Date | null | undefined;
}

export type CreatedRun = { created: true; runId: string; ready: ReadyNode[] } | { created: false; runId: string };

/**
 * Writes runs with their idempotency keys and node rows in one statement (one round trip, one
 * commit, however many runs); nodes without upstream are `queued`. A run whose idempotency key
 * the flow already used — before, or earlier in the same batch — is not written: its answer is
 * the run that holds the key.
 */
export async function createRuns(db: Db, newRuns: NewRun[]): Promise<CreatedRun[]> {
  const runRows = newRuns.map((run) => ({
    id: run.id,
    flow: run.flow.name,
    flow_version_id: run.flow.id,
    trigger: run.trigger,
    payload: run.payload,
    business_key: run.businessKey ?? null,
    idempotency_key: run.idempotencyKey ?? null,
    logical_date: run.logicalDate?.toISOString() ?? null,
    rerun_of: run.rerunOf ?? null,
    priority: run.priority ?? null,
    run_at: run.runAt?.toISOString() ?? null,
    nodes_remaining: run.flow.dag.nodes.length,
  }));
  const nodeRows = newRuns.flatMap((run) =>
    run.flow.dag.nodes.map((node) => ({
      run_id: run.id,
      node_key: node.key,
      task: node.task,
      queue: node.queue,
      ready: node.upstream.length === 0,
      deps_remaining: node.upstream.length,
    })),
  );
  const inserted = await rows<{ id: string }>(
    db,
    sql`
    with input as (
      select * from ${recordset(
        runRows,
        "id uuid, flow text, flow_version_id int, trigger text, payload jsonb, business_key text, idempotency_key text, " +
          "logical_date timestamptz, rerun_of uuid, priority int, run_at timestamptz, nodes_remaining int",
      )} as x
    ), claimed as (
      insert into idempotency_keys (flow, key, run_id)
      select flow, idempotency_key, id from input where idempotency_key is not null
      on conflict (flow, key) do nothing
      returning run_id
    ), created as (
      insert into runs (id, flow, flow_version_id, status, trigger, payload, business_key, idempotency_key,
        logical_date, rerun_of, priority, run_at, nodes_remaining)
      select id, flow, flow_version_id, 'pending', trigger, payload, business_key, idempotency_key,
        logical_date, rerun_of, priority, run_at, nodes_remaining
      from input where idempotency_key is null or id in (select run_id from claimed)
      returning id, created_at, run_at
    ), nodes as (
      insert into node_runs (run_id, node_key, task, queue, status, deps_remaining, attempt, queued_at)
      select n.run_id, n.node_key, n.task, n.queue, case when n.ready then 'queued' else 'pending' end,
        n.deps_remaining, case when n.ready then 1 else 0 end, case when n.ready then greatest(c.created_at, c.run_at) end
      from ${recordset(nodeRows, "run_id uuid, node_key text, task text, queue text, ready boolean, deps_remaining int")} as n
      join created c on c.id = n.run_id
    )
    select id from created`,
  );
  const created = new Set(inserted.map((r) => r.id));
  const holders = await keyHolders(
    db,
    newRuns.filter((r) => !created.has(r.id)),
  );
  return newRuns.map((run) => {
    if (created.has(run.id)) {
      const ready = run.flow.dag.nodes
        .filter((n) => n.upstream.length === 0)
        .map((n) => ({ runId: run.id, nodeKey: n.key, task: n.task, queue: n.queue, attempt: 1, flowVersionId: run.flow.id, ...jobTiming(run) }));
      return { created: true, runId: run.id, ready };
    }
    const holder = holders.get(`${run.flow.name}\u0000${run.idempotencyKey}`);
    if (!holder) throw new Error(`run ${run.id} was neither written nor found by its idempotency key`);
    return { created: false, runId: holder };
  });
}

/** A delayed run's first jobs wait for `runAt`; a prioritised run's jobs carry its priority. */
function jobTiming(run: NewRun): Pick<ReadyNode, "delayMs" | "priority"> {
  return {
    ...(run.runAt ? { delayMs: Math.max(0, run.runAt.getTime() - Date.now()) } : {}),
    ...(run.priority ? { priority: run.priority } : {}),
  };
}

/** Which runs hold these runs' idempotency keys, by flow and key. */
async function keyHolders(db: Db, runs: NewRun[]): Promise<Map<string, string>> {
  if (runs.length === 0) return new Map();
  const keys = runs.map((r) => ({ flow: r.flow.name, key: r.idempotencyKey }));
  const found = await rows<{ flow: string; key: string; run_id: string }>(
    db,
    sql`
    select k.flow, k.key, k.run_id from idempotency_keys k
    join ${recordset(keys, "flow text, key text")} as x on x.flow = k.flow and x.key = k.key`,
  );
  return new Map(found.map((r) => [`${r.flow}\u0000${r.key}`, r.run_id]));
}
