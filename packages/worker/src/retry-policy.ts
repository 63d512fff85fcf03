import {
  AxAttemptAbandonedError,
  AxNotJsonError,
  AxResultTooLargeError,
  AxWorkerCrashedError,
  NonRetryableError,
  RetryAfterError,
} from "@ax/common";
import { errorClasses, errorName, isRevived } from "./executors/error-class.js";
import type { ErrorMatcher, ResolvedTaskOptions } from "./task-definition.js";
import { nonErrorThrown } from "./thrown-value.js";

/** `exhausted`: refused only because the node used up its `retries`. */
export type RetryDecision = { retry: false; reason: string; exhausted?: true } | { retry: true; delayMs: number };

type Policy = Pick<ResolvedTaskOptions, "retries" | "retryBackoffMs" | "backoff" | "jitter" | "maxBackoffMs" | "retryOn" | "noRetryOn">;

function matches(error: unknown, matcher: ErrorMatcher): boolean {
  const name = (error as { name?: unknown } | null)?.name;
  // A string is the name `ax run` shows, which is what a person copies into runtime.yaml: the
  // class name for an error that sets no name of its own, and NonErrorThrown for a thrown string,
  // as on the thread and process executors.
  // Not the raw `name`, which a subclass inherits: a child's error arrives named as shown, so the
  // inline executor must not match a parent's name where thread and process would not.
  if (typeof matcher === "string") return (error instanceof Error ? errorName(error) : nonErrorThrown(error).name) === matcher;
  // An error from a thread or process child is a plain Error carrying its classes' names (none
  // for a thrown string), so it is matched by those alone, as the value it stands for would be;
  // one whose class was loaded twice (two copies of a package) is not an instance either.
  // A matcher without a prototype cannot be an `instanceof` target: options refuse one, but a throw
  // here would leave the attempt's outcome unrecorded.
  const instance = typeof matcher.prototype === "object" && !isRevived(error) && error instanceof matcher;
  return instance || name === matcher.name || errorClasses(error).includes(matcher.name);
}

/** Delay before attempt `failedAttempt + 1`: exponential or fixed, ± jitter, capped. */
export function backoffDelay(policy: Policy, failedAttempt: number, random: () => number = Math.random): number {
  const base = policy.backoff === "fixed" ? policy.retryBackoffMs : policy.retryBackoffMs * 2 ** Math.max(0, failedAttempt - 1);
  const jittered = base * (1 + policy.jitter * (2 * random() - 1));
  return Math.max(0, Math.round(Math.min(jittered, policy.maxBackoffMs)));
}

/**
 * Crashes of one node (its worker died mid-attempt) followed by a new attempt whatever `retries`
 * says: the task did not fail, its worker went away. Past these, a crash counts against `retries`,
 * so a task that kills its worker every time (out of memory) does not take down worker after worker.
 */
export const CRASHES_REDELIVERED = 3;

/**
 * Decides, where the error was caught, whether attempt `attempt` is followed by another.
 * `crashesBefore`: the node's crashed attempts before this one, when this one crashed;
 * `uncharged`: its attempts before this one that workers handed back (they charge no retry);
 * `random` draws the jitter.
 */
export function decideRetry(
  policy: Policy,
  error: unknown,
  attempt: number,
  {
    random,
    crashesBefore = CRASHES_REDELIVERED,
    uncharged = 0,
  }: { random?: () => number; crashesBefore?: number | undefined; uncharged?: number | undefined } = {},
): RetryDecision {
  const charged = attempt - uncharged;
  const exhausted = { retry: false, reason: `no retries left (retries: ${policy.retries})`, exhausted: true } as const;
  // retryOn/noRetryOn classify what the task threw; a crashed worker threw nothing, and a worker
  // that gave its attempt up could not record what the task did (its first crashes are not free:
  // the caller passes no crashesBefore for it).
  if (matches(error, AxWorkerCrashedError) || matches(error, AxAttemptAbandonedError)) {
    return crashesBefore < CRASHES_REDELIVERED || charged <= policy.retries
      ? { retry: true, delayMs: backoffDelay(policy, charged, random) }
      : exhausted;
  }
  if (matches(error, NonRetryableError)) return { retry: false, reason: "the task threw NonRetryableError" };
  if (matches(error, AxResultTooLargeError)) return { retry: false, reason: "a result over maxResultBytes is the same on every attempt" };
  if (matches(error, AxNotJsonError)) return { retry: false, reason: "a value that is not JSON is the same on every attempt" };
  if (charged > policy.retries) return exhausted;
  if (policy.noRetryOn.some((m) => matches(error, m))) return { retry: false, reason: "error is in noRetryOn" };
  if (policy.retryOn && !policy.retryOn.some((m) => matches(error, m))) {
    return { retry: false, reason: "error is not in retryOn" };
  }
  const requested = (error as { delayMs?: unknown } | null)?.delayMs;
  if (matches(error, RetryAfterError) && typeof requested === "number") return { retry: true, delayMs: requested };
  return { retry: true, delayMs: backoffDelay(policy, charged, random) };
}
