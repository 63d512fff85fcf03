import { and, inArray, isNotNull, sql, type SQL } from "drizzle-orm";
import { AxUnknownFlowError } from "@ax/common";
import { flowSettings } from "../schema/index.js";
import type { Db } from "../connect.js";
import type { FlowVersion } from "./flow-definitions.js";
import { jsonParam, recordset, recordsetOf, rows, shapedRows, sizeBucket, type HotValue, type ShapedStatement } from "./raw.js";
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
  /** Written with its nodes but not dispatched: admission releases it (`maxConcurrentRuns`, backfills). */
  held?: { backfillId?: string | null | undefined } | undefined;
  /** A rerun's carried-over nodes: `success` with these results, counted as done, never executed. */
  reuse?: { from: string; results: Map<string, Json> } | undefined;
}

export type CreatedRun = { created: true; runId: string; ready: ReadyNode[] } | { created: false; runId: string };

interface NodeRow {
  run_id: string;
  node_key: string;
  task: string;
  queue: string;
  status: "pending" | "queued" | "success";
  deps_remaining: number;
  result: Json;
  reused_from: string | null;
}

/** Each node's starting row: reused nodes are done, their dependants count only the rest of their upstream. */
function nodeRowsOf(run: NewRun): NodeRow[] {
  const reused = run.reuse?.results;
  return run.flow.dag.nodes.map((node) => {
    if (reused?.has(node.key)) {
      return {
        run_id: run.id,
        node_key: node.key,
        task: node.task,
        queue: node.queue,
        status: "success",
        deps_remaining: 0,
        result: reused.get(node.key)!,
        reused_from: run.reuse!.from,
      };
    }
    const deps = node.upstream.filter((u) => !reused?.has(u)).length;
    const status = deps === 0 && !run.held ? "queued" : "pending";
    return {
      run_id: run.id,
      node_key: node.key,
      task: node.task,
      queue: node.queue,
      status,
      deps_remaining: deps,
      result: null,
      reused_from: null,
    };
  });
}

/**
 * Writes runs with their idempotency keys and node rows in one statement (one round trip, one
 * commit, however many runs); nodes without upstream still to run are `queued`, unless the run
 * is held (then admission queues them). A run whose idempotency key the flow already used —
 * before, or earlier in the same batch — is not written: its answer is the run that holds the key.
 *
 * A batch naming a retired flow writes nothing and throws `AxUnknownFlowError`, so a group commit
 * can split it and fail only the runs of that flow. Callers find a flow's version through a cache
 * (a `Client` keeps it 5 s), so the statement itself checks: it takes a key-share lock on the
 * flows' settings rows, which `ax flow retire` locks for update. A retirement under way makes the
 * statement wait and then see the flow retired; a statement first makes the retirement wait and
 * then find the new run unfinished, and refuse.
 */
export async function createRuns(db: Db, newRuns: NewRun[]): Promise<CreatedRun[]> {
  const runRows = newRuns.map((run, ord) => ({
    id: run.id,
    ord,
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
    nodes_remaining: run.flow.dag.nodes.length - (run.reuse?.results.size ?? 0),
    held: run.held !== undefined,
    backfill_id: run.held?.backfillId ?? null,
  }));
  const nodeRows = newRuns.map(nodeRowsOf);
  // Plain triggers keep the statement as lean as before holds and reruns existed: those parts are
  // added only to batches that use them.
  const anyHeld = newRuns.some((r) => r.held !== undefined);
  const anyReused = newRuns.some((r) => r.reuse !== undefined);
  const nodeInput = anyReused ? nodeRows.flat() : nodeRows.flat().map(({ result: _result, reused_from: _reusedFrom, ...row }) => row);
  const shape: CreateShape = { runs: sizeBucket(runRows.length), nodes: sizeBucket(nodeInput.length), held: anyHeld, reused: anyReused };
  const inserted = await shapedRows<{ id: string }, CreateShape>(db, CREATE, shape, {
    runs: jsonParam(runRows),
    nodes: jsonParam(nodeInput),
  });
  if (inserted.length === 0) await refuseRetired(db, newRuns);
  const created = new Set(inserted.map((r) => r.id));
  const holders = await keyHolders(
    db,
    newRuns.filter((r) => !created.has(r.id)),
  );
  return newRuns.map((run, i) => {
    if (created.has(run.id)) {
      const ready = nodeRows[i]!.filter((n) => n.status === "queued").map((n) => ({
        runId: run.id,
        nodeKey: n.node_key,
        task: n.task,
        queue: n.queue,
        attempt: 1,
        flowVersionId: run.flow.id,
        ...jobTiming(run),
      }));
      return { created: true, runId: run.id, ready };
    }
    const holder = holders.get(`${run.flow.name}\u0000${run.idempotencyKey}`);
    if (!holder) throw new Error(`run ${run.id} was neither written nor found by its idempotency key`);
    return { created: false, runId: holder };
  });
}

interface CreateShape {
  /** Size buckets of the runs and of their node rows. */
  runs: number;
  nodes: number;
  /** Whether any run is held (admission releases it), and whether any reuses a rerun's results. */
  held: boolean;
  reused: boolean;
}

const CREATE: ShapedStatement<CreateShape> = { name: "create_runs", build: createRunsSql };

/** `createRuns`' statement: the parts for held runs and reused results only in the batches that have them. */
function createRunsSql({ runs, nodes, held, reused }: CreateShape, v: HotValue): SQL {
  const heldPart = held
    ? sql`, held as (
      insert into held_runs (run_id, flow, backfill_id)
      select i.id, i.flow, i.backfill_id from input i join created c on c.id = i.id where i.held order by i.ord
    )`
    : sql``;
  const nodeColumns =
    "run_id uuid, node_key text, task text, queue text, status text, deps_remaining int" +
    (reused ? ", result jsonb, reused_from uuid" : "");
  return sql`
    with batch as (
      select * from ${recordsetOf(
        v("runs"),
        runs,
        "id uuid, ord int, flow text, flow_version_id int, trigger text, payload jsonb, business_key text, idempotency_key text, " +
          "logical_date timestamptz, rerun_of uuid, priority int, run_at timestamptz, nodes_remaining int, held boolean, backfill_id uuid",
      )} as x
    ), settings as (
      select s.retired_at from flow_settings s where s.flow in (select flow from batch) for key share of s
    ), input as (
      select * from batch where not exists (select 1 from settings where retired_at is not null)
    ), claimed as (
      insert into idempotency_keys (flow, key, run_id)
      select flow, idempotency_key, id from input where idempotency_key is not null
      on conflict (flow, key) do nothing
      returning run_id
    ), created as (
      insert into runs (id, flow, flow_version_id, status, trigger, payload, business_key, idempotency_key,
        logical_date, rerun_of, priority, run_at, nodes_remaining${reused ? sql`, rerun_root` : sql``})
      select id, flow, flow_version_id, 'pending', trigger, payload, business_key, idempotency_key,
        logical_date, rerun_of, priority, run_at, nodes_remaining
        ${reused ? sql`, coalesce((select coalesce(p.rerun_root, p.id) from runs p where p.id = input.rerun_of), input.rerun_of)` : sql``}
      from input where idempotency_key is null or id in (select run_id from claimed)
      returning id, created_at, run_at
    )${heldPart}, nodes as (
      insert into node_runs (run_id, node_key, task, queue, status, deps_remaining, attempt, queued_at${reused ? sql`, result, reused_from` : sql``})
      select n.run_id, n.node_key, n.task, n.queue, n.status, n.deps_remaining,
        case when n.status = 'queued' then 1 else 0 end, case when n.status = 'queued' then greatest(c.created_at, c.run_at) end
        ${reused ? sql`, n.result, n.reused_from` : sql``}
      from ${recordsetOf(v("nodes"), nodes, nodeColumns)} as n
      join created c on c.id = n.run_id
    )
    select id from created`;
}

/** Nothing was written: the batch may name a retired flow (or only hold keys already used). */
async function refuseRetired(db: Db, runs: NewRun[]): Promise<void> {
  const [retired] = await db
    .select({ flow: flowSettings.flow, retiredAt: flowSettings.retiredAt })
    .from(flowSettings)
    .where(and(inArray(flowSettings.flow, [...new Set(runs.map((r) => r.flow.name))]), isNotNull(flowSettings.retiredAt)))
    .limit(1);
  if (retired?.retiredAt) throw new AxUnknownFlowError(retired.flow, [], retired.retiredAt);
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

/**
 * For each trigger whose idempotency key found an existing run (`created` false): whether that run
 * was written with the trigger's payload (as jsonb: key order and spacing aside); undefined for a
 * run created now, or one gone (pruned). In request order; one statement for any number, none when
 * every run was created.
 */
export async function runsHavePayloads(
  db: Db,
  created: Pick<CreatedRun, "runId" | "created">[],
  runs: Pick<NewRun, "payload">[],
): Promise<(boolean | undefined)[]> {
  const found = created.flatMap((c, i) => (c.created ? [] : [{ runId: c.runId, payload: runs[i]!.payload }]));
  const ords = created.flatMap((c, i) => (c.created ? [] : [i]));
  if (found.length === 0) return created.map(() => undefined);
  const answers = await rows<{ ord: number; same: boolean }>(
    db,
    sql`select x.ord, r.payload = x.payload as same
      from ${recordset(
        found.map((f, ord) => ({ ord, run_id: f.runId, payload: f.payload })),
        "ord int, run_id uuid, payload jsonb",
      )} as x join runs r on r.id = x.run_id`,
  );
  const same = new Map(answers.map((a) => [ords[a.ord]!, a.same]));
  return created.map((_, i) => same.get(i));
}
