import { setTimeout as sleep } from "node:timers/promises";
import { isConnectionError } from "@ax/store";

export { isConnectionError };

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
