import { setTimeout as sleep } from "node:timers/promises";
import { isConnectionError, pgErrorCode, within } from "@ax/store";
import { AxDbDeadlineError } from "@ax/common";

export { isConnectionError };

/** Longest wait between tries; under a deadline, shorter (see withDbRetry). */
const MAX_WAIT_MS = 5000;
const MAX_WAIT_BEFORE_DEADLINE_MS = 1000;

/** Serialisation failure, deadlock, lock or statement timeout: the same statement may pass next time. */
const TRANSIENT_CODES = new Set(["40001", "40P01", "55P03", "57014"]);

/** Connection errors, and refusals that say "not now" rather than "never" (conflicts, timeouts, a full disk). */
export function isTransientDbError(error: unknown): boolean {
  if (isConnectionError(error)) return true;
  const code = pgErrorCode(error);
  return code !== undefined && (TRANSIENT_CODES.has(code) || code.startsWith("53"));
}

export interface DbRetryOptions {
  /** Epoch ms after which no try starts and a try still waiting is abandoned: `AxDbDeadlineError`. @defaultValue none */
  until?: number | undefined;
  /** Which errors are worth another try. @defaultValue isConnectionError */
  retryIf?: ((error: unknown) => boolean) | undefined;
  onRetry?: ((error: unknown, waitMs: number) => void) | undefined;
}

/**
 * Retries a write while PostgreSQL is unreachable, so a worker outlives a database restart
 * instead of losing the result. The writes it wraps are fenced, so a retry of one that did
 * commit changes nothing, and so does a try abandoned at the deadline that commits later.
 */
export async function withDbRetry<T>(fn: () => Promise<T>, options: DbRetryOptions = {}): Promise<T> {
  const { until, retryIf = isConnectionError, onRetry } = options;
  const began = Date.now();
  let waitMs = 100;
  let lastError: unknown;
  for (;;) {
    if (until !== undefined && Date.now() >= until) throw new AxDbDeadlineError(Date.now() - began, lastError);
    try {
      return await (until === undefined ? fn() : beforeDeadline(fn(), until, began));
    } catch (error) {
      if (error instanceof AxDbDeadlineError || !retryIf(error)) throw error;
      lastError = error;
      const wait = until === undefined ? waitMs : Math.min(waitMs, Math.max(0, until - Date.now()));
      onRetry?.(error, wait);
      await sleep(wait);
      // Under a deadline the waits stay short, so a database back a second before it is still seen.
      waitMs = Math.min(waitMs * 2, until === undefined ? MAX_WAIT_MS : MAX_WAIT_BEFORE_DEADLINE_MS);
    }
  }
}

/** A write that hangs (a lock, a half-open connection) must not hold its caller past the deadline. */
async function beforeDeadline<T>(write: Promise<T>, until: number, began: number): Promise<T> {
  const answered = await within(write, until - Date.now());
  if (answered.done) return answered.value;
  if ("error" in answered) throw answered.error;
  throw new AxDbDeadlineError(Date.now() - began, undefined);
}
