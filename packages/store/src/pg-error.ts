/**
 * The SQLSTATE of a PostgreSQL error, wherever it sits: drizzle wraps the driver's error (which
 * carries the code) as `cause`.
 */
export function pgErrorCode(error: unknown): string | undefined {
  for (let e = error, depth = 0; e && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string") return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

const CONNECTION_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "ENOTFOUND", "57P01", "57P02", "57P03"]);
const CONNECTION_MESSAGE =
  /Connection terminated|Query read timeout|connection (?:refused|ended)|Client has encountered a connection error|timeout exceeded when trying to connect|terminating connection due to administrator command|the database system is (?:starting up|shutting down)/i;

/**
 * True for errors that mean "PostgreSQL is unreachable right now", not "this statement is wrong".
 * Drizzle wraps the driver's error (which carries the SQLSTATE) as `cause`, so the chain is
 * walked; only the innermost message is read, as a wrapper's message quotes the query's data.
 */
export function isConnectionError(error: unknown): boolean {
  for (let e = error, depth = 0; e && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && (CONNECTION_CODES.has(code) || code.startsWith("08"))) return true;
    const cause = (e as { cause?: unknown }).cause;
    if (!cause) return e instanceof Error && CONNECTION_MESSAGE.test(e.message);
    e = cause;
  }
  return false;
}
