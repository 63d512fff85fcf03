import { setTimeout as sleep } from "node:timers/promises";
import { isConnectionError, pgErrorCode } from "@ax/store";
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
export function withDbRetry<T>(fn: () => Promise<T>, options: DbRetryOptions = {}): Promise<T> {
  const { until } = options;
  const began = Date.now();
  if (until !== undefined && began >= until) return retrying(fn, options, began);
  // Nearly every write passes at once, and every attempt makes three: the first try goes without
  // the retry loop's async frame.
  const retryIf = options.retryIf ?? isConnectionError;
  const first = until === undefined ? fn() : beforeDeadline(fn(), until, began);
  return first.catch((error: unknown) => {
    if (error instanceof AxDbDeadlineError || !retryIf(error)) throw error;
    return retrying(fn, options, began, { error });
  });
}

async function retrying<T>(fn: () => Promise<T>, options: DbRetryOptions, began: number, failedFirst?: { error: unknown }): Promise<T> {
  const { until, retryIf = isConnectionError } = options;
  let waitMs = 100;
  let lastError: unknown;
  if (failedFirst) {
    lastError = failedFirst.error;
    waitMs = await backOff(lastError, waitMs, options);
  }
  for (;;) {
    if (until !== undefined && Date.now() >= until) throw new AxDbDeadlineError(Date.now() - began, lastError);
    try {
      return await (until === undefined ? fn() : beforeDeadline(fn(), until, began));
    } catch (error) {
      if (error instanceof AxDbDeadlineError || !retryIf(error)) throw error;
      lastError = error;
      waitMs = await backOff(error, waitMs, options);
    }
  }
}

/** Waits before the next try; answers the wait after that. */
async function backOff(error: unknown, waitMs: number, { until, onRetry }: DbRetryOptions): Promise<number> {
  const wait = until === undefined ? waitMs : Math.min(waitMs, Math.max(0, until - Date.now()));
  onRetry?.(error, wait);
  await sleep(wait);
  // Under a deadline the waits stay short, so a database back a second before it is still seen.
  return Math.min(waitMs * 2, until === undefined ? MAX_WAIT_MS : MAX_WAIT_BEFORE_DEADLINE_MS);
}

/**
 * A write that hangs (a lock, a half-open connection) must not hold its caller past the deadline.
 * A timer and one promise: the write's outcome settles it, or the timer does, whichever is first.
 */
function beforeDeadline<T>(write: Promise<T>, until: number, began: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new AxDbDeadlineError(Date.now() - began, undefined)), Math.max(0, until - Date.now()));
    write.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
