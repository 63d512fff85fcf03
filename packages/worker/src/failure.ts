import type { TaskFailure } from "@ax/store";

const MAX_STACK = 4000;
const MAX_MESSAGE = 2000;

/** The one place any thrown value becomes the failure record stored in history. */
export function toTaskFailure(error: unknown, kind: TaskFailure["kind"] = "error"): TaskFailure {
  if (error instanceof Error) {
    // A wrapped error (drizzle's "Failed query: …", a task's own `cause`) keeps its cause's words.
    const cause = error.cause instanceof Error ? ` [cause: ${error.cause.name}: ${error.cause.message}]` : "";
    return {
      name: error.name || "Error",
      message: error.message.slice(0, MAX_MESSAGE - Math.min(cause.length, MAX_MESSAGE / 2)) + cause.slice(0, MAX_MESSAGE / 2),
      stack: error.stack ? error.stack.slice(0, MAX_STACK) : null,
      kind,
    };
  }
  return { name: "NonErrorThrown", message: String(error).slice(0, MAX_MESSAGE), stack: null, kind };
}
