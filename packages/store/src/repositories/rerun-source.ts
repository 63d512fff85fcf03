import { sql } from "drizzle-orm";
import type { Db } from "../connect.js";
import type { Json, RunStatus, TaskStatus } from "../types.js";
import { rows } from "./raw.js";

/** What a rerun needs of the run it repeats. */
export interface RerunSource {
  id: string;
  flow: string;
  flowVersionId: number;
  status: RunStatus;
  payload: Json;
  businessKey: string | null;
  logicalDate: Date | null;
  nodes: { key: string; status: TaskStatus; result: Json }[];
}

export async function rerunSource(db: Db, runId: string): Promise<RerunSource | undefined> {
  const [run] = await rows<{
    flow: string;
    flow_version_id: number;
    status: RunStatus;
    payload: Json;
    business_key: string | null;
    logical_date: string | Date | null;
  }>(db, sql`select flow, flow_version_id, status, payload, business_key, logical_date from runs where id = ${runId}`);
  if (!run) return undefined;
  const nodes = await rows<{ node_key: string; status: TaskStatus; result: Json }>(
    db,
    sql`select node_key, status, result from node_runs where run_id = ${runId}`,
  );
  return {
    id: runId,
    flow: run.flow,
    flowVersionId: run.flow_version_id,
    status: run.status,
    payload: run.payload ?? null,
    businessKey: run.business_key,
    logicalDate: run.logical_date === null ? null : new Date(run.logical_date),
    nodes: nodes.map((n) => ({ key: n.node_key, status: n.status, result: n.result ?? null })),
  };
}
