import { createHash } from "node:crypto";
import { sql } from "drizzle-orm";
import type { Db } from "../connect.js";
import { createRuns, runsHavePayloads, type CreatedRun, type NewRun } from "./create-run.js";
import { pgErrorCode } from "../pg-error.js";
import { jsonParam, rows, uuidList } from "./raw.js";
import { firstNodeOf, type FirstNodeRow, type ReadyNode } from "./ready-node.js";
import { AxNotInTransactionError } from "@ax/common";

/** Channel names are identifiers: at most 63 bytes. */
const MAX_CHANNEL = 63;

/**
 * The NOTIFY channel on which runs created inside a caller's transaction are announced, one per
 * schema (one ax cluster per schema). A schema name too long to fit is replaced by its hash.
 */
export function runsChannel(schema: string): string {
  const channel = `ax_runs_${schema}`;
  return channel.length <= MAX_CHANNEL ? channel : `ax_runs_${createHash("sha256").update(schema).digest("hex").slice(0, 40)}`;
}

/**
 * Writes runs on the caller's connection, inside the caller's transaction: they commit or roll
 * back with the caller's own writes. Each created run is announced with `pg_notify`, which
 * PostgreSQL delivers only on commit, so a listener dispatches its first jobs then and never
 * before. The caller's session is left as found: the statements run under a savepoint with
 * `search_path` set to ax's schema only for their duration, and a failure rolls back to that
 * savepoint, so the caller's transaction stays usable. A run an idempotency key found says whether
 * it has the trigger's payload (`samePayload`), read in the same transaction, which sees a run
 * that transaction itself created.
 */
export async function createRunsInTransaction(
  tx: Db,
  schema: string,
  newRuns: NewRun[],
): Promise<(CreatedRun & { samePayload?: boolean | undefined })[]> {
  try {
    await tx.execute(sql`savepoint ax_trigger`);
  } catch (error) {
    // 25P01: SAVEPOINT outside a transaction block.
    if (pgErrorCode(error) === "25P01") throw new AxNotInTransactionError(error);
    throw error;
  }
  try {
    const [saved] = await rows<{ path: string }>(tx, sql`select current_setting('search_path') as path`);
    await tx.execute(sql`select set_config('search_path', quote_ident(${schema}), true)`);
    const written = await createRuns(tx, newRuns);
    const same = await runsHavePayloads(tx, written, newRuns);
    const created = written.map((c, i) => ({ ...c, samePayload: same[i] }));
    const announced = created.filter((c) => c.created).map((c) => c.runId);
    await tx.execute(sql`
      select set_config('search_path', ${saved?.path ?? ""}, true),
        (select count(pg_notify(${runsChannel(schema)}, id)) from jsonb_array_elements_text(${jsonParam(announced)}::jsonb) as ids(id))`);
    await tx.execute(sql`release savepoint ax_trigger`);
    return created;
  } catch (error) {
    await tx.execute(sql`rollback to savepoint ax_trigger`).catch(() => {});
    await tx.execute(sql`release savepoint ax_trigger`).catch(() => {});
    throw error;
  }
}

/**
 * The first nodes of these runs still waiting for their job (`queued`, attempt 1), with each
 * run's priority and what is left of its delay by PostgreSQL's clock.
 */
export async function firstReadyNodes(db: Db, runIds: string[]): Promise<ReadyNode[]> {
  if (runIds.length === 0) return [];
  const found = await rows<FirstNodeRow>(
    db,
    sql`
    select n.run_id, n.node_key, n.task, n.queue, r.flow_version_id, r.priority,
      greatest(0, ceil(extract(epoch from (n.queued_at - now())) * 1000))::int as delay_ms
    from node_runs n join runs r on r.id = n.run_id
    where n.run_id in ${uuidList(runIds)} and n.status = 'queued' and n.attempt = 1`,
  );
  return found.map(firstNodeOf);
}
