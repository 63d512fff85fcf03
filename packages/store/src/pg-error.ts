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
