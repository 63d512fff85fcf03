import { sql, type SQL } from "drizzle-orm";
import type { Db } from "../connect.js";
import {
  elementsUpTo,
  hotRows,
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
import type { AttemptRef } from "./types.js";

export interface NodeInputs {
  payload: Json;
  /** Results of the upstream nodes asked for, by node key. */
  upstream: Record<string, Json>;
}

export interface InputRequest extends AttemptRef {
  upstreamKeys: string[];
}

/**
 * What waiting nodes' arguments are made of, read before their start so that a limit per business
 * key can be checked without starting the attempt; many nodes in one statement (workers classify
 * a burst of jobs at once). Undefined for a node that no longer waits for that attempt (a stale
 * or duplicate job: the fence drops it).
 */
export async function waitingNodeInputs(db: Db, requests: InputRequest[]): Promise<(NodeInputs | undefined)[]> {
  const input = requests.map((r) => ({ run_id: r.runId, node_key: r.nodeKey, attempt: r.attempt, upstream: r.upstreamKeys }));
  const shape: InputsShape = { rows: sizeBucket(input.length), upstream: sizeBucket(longestOf(input.map((i) => i.upstream))) };
  const found = await shapedRows<InputRow, InputsShape>(db, INPUTS, shape, { input: jsonParam(input) });
  const byRef = new Map(found.map((row) => [`${row.run_id}/${row.node_key}/${row.attempt}`, row]));
  return requests.map((r) => {
    const row = byRef.get(`${r.runId}/${r.nodeKey}/${r.attempt}`);
    return row ? { payload: row.payload ?? null, upstream: row.upstream ?? {} } : undefined;
  });
}

interface InputRow {
  run_id: string;
  node_key: string;
  attempt: number;
  payload: Json;
  upstream: Record<string, Json> | null;
}

/** Size buckets of the batch and of its longest upstream list. */
interface InputsShape {
  rows: number;
  upstream: number;
}

const INPUTS: ShapedStatement<InputsShape> = { name: "inputs", build: inputsSql };

function inputsSql({ rows, upstream }: InputsShape, v: HotValue): SQL {
  return sql`
    select i.run_id, i.node_key, i.attempt, r.payload,
      (select jsonb_object_agg(u.node_key, u.result) from node_runs u
        where u.run_id = i.run_id and u.node_key in ${elementsUpTo(sql`i.upstream`, upstream)}) as upstream
    from ${recordsetOf(v("input"), rows, "run_id uuid, node_key text, attempt int, upstream jsonb")} as i
    join node_runs n on n.run_id = i.run_id and n.node_key = i.node_key and n.attempt = i.attempt
      and ${statusIs(sql`n.status`, "queued", "retrying")}
    join runs r on r.id = i.run_id`;
}

/**
 * A node's argument inputs whatever its status: what a worker needs to read the business key of a
 * stale job (its run ended while the job waited in its key's line), to give up the job's place.
 * Undefined when the run is gone.
 */
export async function nodeInputsAnyStatus(db: Db, runId: string, upstreamKeys: string[]): Promise<NodeInputs | undefined> {
  const [row] = await hotRows<{ payload: Json; upstream: Record<string, Json> | null }>(
    db,
    sql`
    select r.payload,
      (select jsonb_object_agg(u.node_key, u.result) from node_runs u
        where u.run_id = r.id and u.node_key in (select jsonb_array_elements_text(${JSON.stringify(upstreamKeys)}::jsonb))) as upstream
    from runs r where r.id = ${runId}`,
  );
  return row ? { payload: row.payload ?? null, upstream: row.upstream ?? {} } : undefined;
}
