import { DrizzleQueryError } from "drizzle-orm";

/**
 * A statement PostgreSQL refused or could not run, carrying only PostgreSQL's own words. Drizzle's
 * error quotes the whole query and its parameters, which for a group-committed batch are every
 * caller's data; that text must never reach another caller, a stored error or an HTTP answer.
 */
export class AxStoreError extends Error {
  override name = "AxStoreError";
  /** SQLSTATE (e.g. `22P05`) or the driver's error code (e.g. `ECONNREFUSED`). */
  readonly code: string | undefined;

  constructor(driverError: unknown) {
    const code = (driverError as { code?: unknown } | undefined)?.code;
    const reason = driverError instanceof Error ? driverError.message : "the statement failed";
    const shownCode = typeof code === "string" ? code : undefined;
    super(`PostgreSQL refused the statement: ${reason}${shownCode ? ` (${/^[0-9A-Z]{5}$/.test(shownCode) ? "SQLSTATE " : ""}${shownCode})` : ""}`, {
      cause: driverError,
    });
    this.code = shownCode;
  }
}

/** The error to hand on: drizzle's query error becomes an AxStoreError; anything else is returned as is. */
export function toStoreError(error: unknown): unknown {
  return error instanceof DrizzleQueryError ? new AxStoreError(error.cause) : error;
}
