import { pgErrorCode } from "@ax/store";
import type { Logger } from "pino";
import { isConnectionError, isTransientDbError, withDbRetry } from "./db-retry.js";
import { AxDbDeadlineError } from "@ax/common";

/** An attempt whose function returned or threw has a recorded outcome (or is given up) within this. */
export const OUTCOME_DEADLINE_MS = 30_000;
/** The outcome as the task produced it is retried until this long after the function ended. */
const FULL_WRITE_MS = 20_000;
/** Then a short failure holding no user data, until this; giving the attempt up gets the rest. */
const SHORT_WRITE_MS = 27_000;
const SQLSTATE = /^[0-9A-Z]{5}$/;

export interface OutcomeWrites<T> {
  /** Writes the outcome as the task produced it (result, or its error). */
  full(): Promise<T>;
  /** Writes a failure holding no user data that says why `full` was not written. */
  short(why: string): Promise<T>;
  /** Hands the attempt to the reconciler although this worker is alive; true when it applied. */
  giveUp(): Promise<boolean>;
}

/**
 * Gets an attempt's outcome into PostgreSQL within `OUTCOME_DEADLINE_MS` of `since` (when its
 * function ended), whatever goes wrong with the write: transient errors are retried with
 * backoff; a refused write falls back to a short failure; if that cannot be written either,
 * the attempt is given up so that the reconciler takes it as if this worker had died.
 * Undefined when no outcome was written. Never throws.
 */
export async function recordOutcome<T>(writes: OutcomeWrites<T>, log: Logger, since = Date.now()): Promise<T | undefined> {
  let why: string;
  try {
    return await withDbRetry(writes.full, { until: since + FULL_WRITE_MS, retryIf: isTransientDbError });
  } catch (error) {
    why = describeRefusal(error);
    log.error({ err: error }, `could not record the attempt's outcome (${why}); recording a short failure instead`);
  }
  try {
    return await withDbRetry(() => writes.short(why), { until: since + SHORT_WRITE_MS, retryIf: () => true });
  } catch (error) {
    log.error({ err: error }, "could not record a short failure either; giving the attempt up to the reconciler");
  }
  try {
    const applied = await withDbRetry(writes.giveUp, { until: since + OUTCOME_DEADLINE_MS });
    if (applied) log.error("gave the attempt up: the reconciler hands it to a worker as if this one had died");
  } catch (error) {
    log.error({ err: error }, "could not give the attempt up; it is taken over once this worker stops heartbeating");
  }
  return undefined;
}

/** Why a write failed, in words that cannot hold the data written (driver messages may quote it). */
function describeRefusal(error: unknown): string {
  if (error instanceof AxDbDeadlineError) return `PostgreSQL did not accept the write within ${Math.round(error.waitedMs / 1000)} s`;
  if (isConnectionError(error)) return "PostgreSQL was unreachable";
  const code = pgErrorCode(error);
  if (code !== undefined && SQLSTATE.test(code)) return `PostgreSQL refused the write (SQLSTATE ${code})`;
  return `the write failed with ${error instanceof Error ? error.constructor.name : typeof error}`;
}
