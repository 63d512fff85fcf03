import type { Isolated } from "../helpers/isolated.js";

/**
 * Starts measuring the write-ahead log PostgreSQL writes while a scenario runs; the returned
 * function answers it in bytes per task. Unlike CPU it does not drift with the machine's load:
 * the same statements over the same rows write the same log, so a change to what a task writes
 * (an index entry, a row version, a row lock) shows here in one run. The server's whole log
 * counts, every database's; on a quiet machine the bench is the only writer. A checkpoint during
 * the scenario adds a full image of each page first changed after it.
 */
export async function meterWal(env: Isolated): Promise<(tasks: number) => Promise<number>> {
  const [{ lsn: before }] = (await env.sql<{ lsn: string }>("select pg_current_wal_lsn()::text as lsn")) as [{ lsn: string }];
  return async (tasks) => {
    const [{ bytes }] = (await env.sql<{ bytes: string }>("select pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::text as bytes", [
      before,
    ])) as [{ bytes: string }];
    return Number(bytes) / tasks;
  };
}
