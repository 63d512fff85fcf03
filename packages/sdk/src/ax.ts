import { onEvent, taskContextStorage, type TaskContext } from "@ax/worker";
import { defineFlow } from "./definition/flow.js";
import { defineTask } from "./definition/task.js";
import { AxDefinitionError } from "./errors.js";

/** The running task's context; throws outside a task attempt. */
function context(): TaskContext {
  const current = taskContextStorage.getStore();
  if (!current) {
    throw new AxDefinitionError("ax.context() was called outside a running task; it is only available while a worker runs an attempt");
  }
  return current;
}

export const ax = {
  task: defineTask,
  flow: defineFlow,
  context,
  onEvent,
};
