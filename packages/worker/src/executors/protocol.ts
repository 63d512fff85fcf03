import type { Json } from "@ax/store";
import type { AttemptIdentity } from "../context.js";
import type { CapturedLine } from "../log-capture.js";
import { carryClasses, errorClasses, errorName } from "./error-class.js";
import { nonErrorThrown } from "../thrown-value.js";

/** What a thread or process child is told to run: one attempt, its module and its context. */
export interface RunMessage {
  type: "run";
  moduleUrl: string;
  task: string;
  args: Json[];
  context: AttemptIdentity;
  log: { level: string; bindings: Record<string, unknown> };
}

/**
 * `ax.once` in a child: the parent claims, completes and releases keys for it, so the child needs
 * no database connection. `claim` numbers a claim the parent holds (and renews) for the child.
 */
export type OnceRequest = { op: "claim"; key: string } | { op: "complete"; claim: number; result: Json } | { op: "release"; claim: number };

export type OnceAnswer =
  | { outcome: "claimed"; claim: number }
  | { outcome: "done"; result: Json }
  | { outcome: "released" }
  | { outcome: "error"; error: SerialisedError };

/** What the parent sends its child: an attempt to run, or the answer to one of its once requests. */
export type ParentMessage = RunMessage | ({ type: "once-reply"; id: number } & OnceAnswer);

/** A thrown value as it crosses the boundary: its name and classes keep retryOn/noRetryOn working. */
export interface SerialisedError {
  name: string;
  /** Constructor names from its class up to Error: a class matcher matches a subclass by them. */
  classes: string[];
  message: string;
  stack: string | null;
  /** RetryAfterError's delay. */
  delayMs?: number;
  code?: string;
  /** The error it wraps, so a thread or process failure is recorded with its cause's words as an inline one is. */
  cause?: SerialisedError;
}

/** Causes carried across the boundary: a chain longer than this is cut (and a cycle ends). */
const CAUSE_DEPTH = 3;

export type ChildMessage =
  /** The child has loaded its entry; `threadPath` is `/proc/thread-self` where Linux has it. */
  | { type: "ready"; threadPath: string | null }
  /** The task's module is loaded and its function called: the attempt's clocks start now. */
  | { type: "started" }
  | { type: "heartbeat"; progress?: Json }
  /** `ranMs`: how long the function ran, by the child's clock (the parent's may have been held up). */
  | { type: "result"; value: unknown; ranMs?: number }
  | { type: "once"; id: number; request: OnceRequest }
  /** An `ax.context().log` line, stored by the parent with the attempt's others. */
  | { type: "log"; line: CapturedLine }
  /** `fatal`: thrown outside the task's own call chain; the child is exiting. */
  | { type: "error"; error: SerialisedError; fatal?: boolean; ranMs?: number };

export function serialiseError(error: unknown, depth = 0): SerialisedError {
  if (!(error instanceof Error)) return { ...nonErrorThrown(error), classes: [], stack: null };
  const out: SerialisedError = {
    name: errorName(error),
    classes: [...errorClasses(error)],
    message: error.message,
    stack: error.stack ?? null,
  };
  const { delayMs, code } = error as { delayMs?: unknown; code?: unknown };
  if (typeof delayMs === "number") out.delayMs = delayMs;
  if (typeof code === "string") out.code = code;
  if (error.cause instanceof Error && depth < CAUSE_DEPTH) out.cause = serialiseError(error.cause, depth + 1);
  return out;
}

/** An Error standing for one thrown in a child: same name, classes, message, stack (and delay, code, cause). */
export function reviveError(serialised: SerialisedError): Error {
  const error = new Error(serialised.message);
  error.name = serialised.name;
  carryClasses(error, serialised.classes);
  // A thrown non-Error has no stack, as on the inline executor: one made up here would be recorded.
  error.stack = serialised.stack ?? undefined;
  if (serialised.delayMs !== undefined) Object.assign(error, { delayMs: serialised.delayMs });
  if (serialised.code !== undefined) Object.assign(error, { code: serialised.code });
  if (serialised.cause) error.cause = reviveError(serialised.cause);
  return error;
}
