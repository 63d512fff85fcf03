import { DrizzleQueryError } from "drizzle-orm";
import pg from "pg";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import { AxClosedError, AxSchemaNotMigratedError, AxStoreError } from "@ax/common";
import { isConnectionError, pgErrorCode } from "./pg-error.js";

/** node-postgres's answer once its pool was ended (`Client.close()`). */
const POOL_ENDED = /Cannot use a pool after calling end on the pool/;

/** "undefined table", "undefined column": every statement of ax names only ax's own tables. */
const NOT_MIGRATED_CODES = new Set(["42P01", "42703"]);

/** The schema each guarded Db's statements run in, for statements that bypass drizzle (`hotRows`). */
const schemas = new WeakMap<object, string>();

/**
 * The error to hand on: drizzle's query error, whose message quotes the statement and its
 * parameters, becomes an AxSchemaNotMigratedError (a missing table or column) or an
 * AxStoreError (anything else), carrying only PostgreSQL's own words, or an AxClosedError when
 * the pool was ended; other errors (a task's own, say) are returned as is.
 */
export function toStoreError(error: unknown, schema?: string): unknown {
  if (!(error instanceof DrizzleQueryError)) return error;
  if (POOL_ENDED.test(error.cause?.message ?? "")) return new AxClosedError();
  const code = pgErrorCode(error.cause);
  if (schema !== undefined && code !== undefined && NOT_MIGRATED_CODES.has(code)) {
    return new AxSchemaNotMigratedError(schema, code, error.cause);
  }
  return new AxStoreError(error.cause);
}

/** The schema `db` was guarded for (`guardStoreErrors`), if it was. */
export function schemaOf(db: object): string | undefined {
  return schemas.get(db);
}

type Run = (placeholders?: Record<string, unknown>) => Promise<unknown>;
/** The parts of drizzle's PgSession and PgPreparedQuery (node-postgres and PGlite alike) every statement goes through. */
interface Session {
  prepareQuery(...args: unknown[]): { execute: Run; all?: Run };
  transaction(...args: unknown[]): Promise<unknown>;
}

/**
 * Makes every statement run on `db` (queries, `execute`, transactions as a whole) fail with
 * `toStoreError`'s typed errors, so that no caller of the store, down to the CLI and HTTP API,
 * sees drizzle's message with the query and its parameters. Inside a transaction a statement's
 * error is still drizzle's (so the transaction's code can inspect it); it is translated as it
 * leaves the transaction. Patches this one db's session, never drizzle's classes, which a user
 * of ax may share.
 */
export function guardStoreErrors<D extends PgDatabase<PgQueryResultHKT, any>>(db: D, schema: string): D {
  const session = db._.session as unknown as Session;
  const translate = (error: unknown): never => {
    throw toStoreError(error, schema);
  };
  const prepareQuery = session.prepareQuery.bind(session);
  session.prepareQuery = (...args) => {
    const prepared = prepareQuery(...args);
    const execute = prepared.execute.bind(prepared);
    prepared.execute = (placeholders) => execute(placeholders).catch(translate);
    const all = prepared.all?.bind(prepared);
    if (all) prepared.all = (placeholders) => all(placeholders).catch(translate);
    return prepared;
  };
  const transaction = session.transaction.bind(session);
  session.transaction = (...args) =>
    transaction(...args).catch((error: unknown) => {
      throw connectionFailure(error, schema);
    });
  schemas.set(db, schema);
  return db;
}

/**
 * A transaction's (or a session's) connection is taken before its first statement, so a failure to
 * get one is the driver's own error, not drizzle's: an unreachable server or its refusal is an
 * AxStoreError, an ended pool an AxClosedError, as they are for a single statement.
 */
export function connectionFailure(error: unknown, schema: string): unknown {
  if (error instanceof DrizzleQueryError) return toStoreError(error, schema);
  if (error instanceof Error && POOL_ENDED.test(error.message)) return new AxClosedError();
  // The server's own refusal while connecting (unknown database or role, starting up, too many clients).
  if (error instanceof pg.DatabaseError) return new AxStoreError(error);
  return isConnectionError(error) ? new AxStoreError(error) : error;
}
