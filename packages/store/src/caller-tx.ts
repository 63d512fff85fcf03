import { drizzle as drizzlePg } from "drizzle-orm/node-postgres";
import type pg from "pg";
import type { Db } from "./connect.js";
import { AxTransactionHandleError } from "@ax/common";

/** What `triggerFlow(…, { tx })` accepts: a `pg` client after BEGIN, or a drizzle transaction. */
export type CallerTransactionHandle = { query: (...args: never[]) => unknown } | { execute: (...args: never[]) => unknown };

/**
 * The caller's transaction as a Db ax's statements can run on. A drizzle transaction already is
 * one (drizzle over node-postgres or PGlite); a `pg` Client/PoolClient is wrapped. A pool is
 * refused: each statement could run on a different connection, outside the caller's transaction.
 */
export function callerTransactionDb(handle: CallerTransactionHandle): Db {
  if (typeof handle !== "object" || handle === null) throw new AxTransactionHandleError(String(handle));
  if ("execute" in handle && typeof handle.execute === "function") return handle as unknown as Db;
  if ("totalCount" in handle && "idleCount" in handle) throw new AxTransactionHandleError("a pg.Pool");
  if ("query" in handle && typeof handle.query === "function")
    return drizzlePg(handle as unknown as pg.ClientBase as pg.PoolClient) as unknown as Db;
  throw new AxTransactionHandleError("an object that is neither a pg client nor a drizzle transaction");
}
