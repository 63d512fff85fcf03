import { sql, type SQL } from "drizzle-orm";
import type { Db } from "../connect.js";
import { jsonParam, rows, uuidListOf } from "../repositories/raw.js";
import type { RunStatus } from "../types.js";

/**
 * The lock order every multi-row write of a run follows: the run rows first, in id order, then
 * its node rows. Two transactions touching the same runs then queue instead of deadlocking.
 * (The start fence is the one exception, and cannot deadlock: it takes a run row only with
 * `skip locked`.)
 */

export interface LockedRun {
  id: string;
  status: RunStatus;
}

/**
 * The locking select, for use inside a statement as `locked as materialized (...)`. Every row
 * change after it must depend on `(select count(*) from locked)`: an uncorrelated subquery, run
 * once before the first node row is touched. A count, not EXISTS, because a CTE is read lazily
 * and EXISTS would lock only the first run.
 */
export function lockRunsSql(runIds: string[]): SQL {
  const ids = lockOrder(runIds);
  return lockRunsOf(sql`${jsonParam(ids)}`, ids.length);
}

/** The distinct run ids, in the order they are locked. */
export function lockOrder(runIds: string[]): string[] {
  return [...new Set(runIds)].sort();
}

/** `lockRunsSql` of a JSON array of up to `count` run ids, in `lockOrder` (a shaped statement's value). */
export function lockRunsOf(json: SQL, count: number): SQL {
  return sql`select id, status from runs where id in ${uuidListOf(json, count)} order by id for update`;
}

/** Locks the run rows in a transaction, as its first statement; answers the runs found. */
export async function lockRuns(tx: Db, runIds: string[]): Promise<LockedRun[]> {
  return rows<LockedRun>(tx, lockRunsSql(runIds));
}
