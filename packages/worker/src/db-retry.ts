import { setTimeout as sleep } from "node:timers/promises";

const CONNECTION_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "ENOTFOUND", "57P01", "57P02", "57P03"]);

/** True for errors that mean "PostgreSQL is unreachable right now", not "this statement is wrong". */
export function isConnectionError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "string" && (CONNECTION_CODES.has(code) || code.startsWith("08"))) return true;
  const message = error instanceof Error ? error.message : "";
  return /Connection terminated|connection (?:refused|ended)|Client has encountered a connection error|timeout exceeded when trying to connect/i.test(
    message,
  );
}

/**
 * Retries a write while PostgreSQL is unreachable, so a worker outlives a database restart
 * instead of losing the result. The writes it wraps are fenced, so a retry of one that did
 * commit changes nothing.
 */
export async function withDbRetry<T>(fn: () => Promise<T>, onRetry?: (error: unknown, waitMs: number) => void): Promise<T> {
  let waitMs = 100;
  for (;;) {
    try {
      return await fn();
    } catch (error) {
      if (!isConnectionError(error)) throw error;
      onRetry?.(error, waitMs);
      await sleep(waitMs);
      waitMs = Math.min(waitMs * 2, 5000);
    }
  }
}
