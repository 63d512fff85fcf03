import { and, eq, sql } from "drizzle-orm";
import type { Db } from "../connect.js";
import type { FlowVersion } from "./flow-definitions.js";
import { idempotencyKeys } from "../schema/index.js";
import { jsonParam } from "./raw.js";
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
}

export type CreatedRun = { created: true; runId: string; ready: ReadyNode[] } | { created: false; runId: string };

const UNIQUE_VIOLATION = "23505";

/**
 * Writes the run and all its node rows in one transaction; nodes without upstream are `queued`.
 * An idempotency key already used for the flow returns that run and writes nothing.
 */
export async function createRun(db: Db, run: NewRun): Promise<CreatedRun> {
  const key = run.idempotencyKey ?? null;
  if (key !== null) {
    const existing = await runForKey(db, run.flow.name, key);
    if (existing) return { created: false, runId: existing };
  }
  try {
    return await insertRun(db, run);
  } catch (error) {
    // Two triggers with one key raced: the loser's transaction rolled back, the winner's run stands.
    if (key !== null && (error as { code?: string }).code === UNIQUE_VIOLATION) {
      const existing = await runForKey(db, run.flow.name, key);
      if (existing) return { created: false, runId: existing };
    }
    throw error;
  }
}

async function runForKey(db: Db, flow: string, key: string): Promise<string | undefined> {
  const [row] = await db
    .select({ runId: idempotencyKeys.runId })
    .from(idempotencyKeys)
    .where(and(eq(idempotencyKeys.flow, flow), eq(idempotencyKeys.key, key)));
  return row?.runId;
}

/** Run, idempotency key and node rows in one statement: one round trip and one commit. */
async function insertRun(db: Db, run: NewRun): Promise<CreatedRun> {
  const nodes = run.flow.dag.nodes.map((node) => {
    const ready = node.upstream.length === 0;
    return {
      node_key: node.key,
      task: node.task,
      queue: node.queue,
      status: ready ? "queued" : "pending",
      deps_remaining: node.upstream.length,
      attempt: ready ? 1 : 0,
    };
  });
  await db.execute(sql`
    with run as (
      insert into runs (id, flow, flow_version_id, status, trigger, payload, business_key, idempotency_key,
        logical_date, rerun_of, nodes_remaining)
      values (${run.id}, ${run.flow.name}, ${run.flow.id}, 'pending', ${run.trigger}, ${jsonParam(run.payload)}::jsonb,
        ${run.businessKey ?? null}, ${run.idempotencyKey ?? null}, ${run.logicalDate?.toISOString() ?? null}::timestamptz,
        ${run.rerunOf ?? null}::uuid, ${nodes.length})
      returning id, created_at
    ), key as (
      insert into idempotency_keys (flow, key, run_id)
      select ${run.flow.name}, ${run.idempotencyKey ?? null}::text, id from run where ${run.idempotencyKey ?? null}::text is not null
    )
    insert into node_runs (run_id, node_key, task, queue, status, deps_remaining, attempt, queued_at)
    select run.id, n.node_key, n.task, n.queue, n.status, n.deps_remaining, n.attempt,
      case when n.status = 'queued' then run.created_at end
    from run, jsonb_to_recordset(${jsonParam(nodes)}::jsonb)
      as n(node_key text, task text, queue text, status text, deps_remaining int, attempt int)`);
  const ready = run.flow.dag.nodes
    .filter((n) => n.upstream.length === 0)
    .map((n) => ({ runId: run.id, nodeKey: n.key, task: n.task, queue: n.queue, attempt: 1, flowVersionId: run.flow.id }));
  return { created: true, runId: run.id, ready };
}
