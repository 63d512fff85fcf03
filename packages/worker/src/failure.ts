import { toStorableText, toStoreError, type TaskFailure } from "@ax/store";
import { errorName } from "./executors/error-class.js";
import { nonErrorThrown, textOf } from "./thrown-value.js";

const MAX_STACK = 4000;
const MAX_MESSAGE = 2000;

/** The one place any thrown value becomes the failure record stored in history. */
export function toTaskFailure(thrown: unknown, kind: TaskFailure["kind"] = "error"): TaskFailure {
  // A query error's own text quotes the statement and its parameters (other runs' data in a batch).
  const error = toStoreError(thrown);
  if (error instanceof Error) {
    const cause = causeText(error);
    const message = storable(textOf(error.message), MAX_MESSAGE - Math.min(cause.length, MAX_MESSAGE / 2));
    return {
      name: storable(errorName(error), MAX_MESSAGE),
      message: message + storable(cause, MAX_MESSAGE - message.length),
      stack: stackOf(error),
      kind,
    };
  }
  const thrownValue = nonErrorThrown(error);
  return { name: storable(thrownValue.name, MAX_MESSAGE), message: storable(thrownValue.message, MAX_MESSAGE), stack: null, kind };
}

/** A wrapped error (a task's own `cause`, a driver error) keeps its cause's words, unless the message already says them. */
function causeText(error: Error): string {
  const cause = toStoreError(error.cause);
  if (!(cause instanceof Error)) return "";
  const said = textOf(cause.message);
  if (textOf(error.message).includes(said)) return "";
  return ` [cause: ${errorName(cause)}: ${said}]`;
}

/**
 * `text` as PostgreSQL can store it, at most `max` UTF-16 units, cut at a code-point boundary
 * (cutting inside a surrogate pair would leave half an emoji, which jsonb refuses) and ending in
 * "…" when cut, so a reader of the history knows there was more.
 */
function storable(text: string, max: number): string {
  const clean = toStorableText(text);
  if (clean.length <= max || max < 1) return clean.slice(0, Math.max(0, max));
  const keep = max - 1;
  const last = clean.charCodeAt(keep - 1);
  return `${clean.slice(0, last >= 0xd800 && last <= 0xdbff ? keep - 1 : keep)}…`;
}

/** V8 formats a stack on first read, turning the message into text: a message that refuses (an object whose toString is not callable) throws there. */
function stackOf(error: Error): string | null {
  try {
    return error.stack ? storable(textOf(error.stack), MAX_STACK) : null;
  } catch {
    return null;
  }
}
