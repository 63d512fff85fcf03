import type { TaskFailure } from "@ax/store";

const MAX_STACK = 4000;
const MAX_MESSAGE = 2000;

/** The one place any thrown value becomes the failure record stored in history. */
export function toTaskFailure(error: unknown, kind: TaskFailure["kind"] = "error"): TaskFailure {
  if (error instanceof Error) {
    return {
      name: error.name || "Error",
      message: error.message.slice(0, MAX_MESSAGE),
      stack: error.stack ? error.stack.slice(0, MAX_STACK) : null,
      kind,
    };
  }
  return { name: "NonErrorThrown", message: String(error).slice(0, MAX_MESSAGE), stack: null, kind };
}
