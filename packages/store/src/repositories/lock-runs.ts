import { sql } from "drizzle-orm";
import type { Db } from "../connect.js";
import { uuidList } from "./raw.js";

/**
 * The lock order every multi-row write of a run follows: the run rows first, in id order, then
 * its node rows. Two transactions touching the same runs then queue instead of deadlocking.
 */
export async function lockRuns(tx: Db, runIds: string[]): Promise<void> {
  const ids = [...new Set(runIds)].sort();
  await tx.execute(sql`
    select 1 from runs where id in ${uuidList(ids)}
    order by id for update`);
}
