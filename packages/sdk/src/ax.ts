import { runOnce, type Json } from "@ax/store";
import { currentAttemptStore, onEvent, taskContextStorage, type TaskContext } from "@ax/worker";
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

/**
 * Runs `fn` at most once per `key`, across retries, reruns and workers, and returns its result
 * (the stored one on every later call). Keys are global to the cluster: build them from what
 * makes the effect unique, e.g. `charge:${payment_id}`; `ax.context().idempotencyKey` is unique
 * per node of a run but a rerun gets a new one.
 *
 * `fn` runs inside a PostgreSQL transaction that holds the key: a concurrent caller waits for it,
 * and if `fn` throws or its process dies, nothing is stored and the next attempt runs `fn` again.
 * So an effect outside the database should itself be idempotent (pass the key on to the API you
 * call). The result must be JSON. Only for tasks run by the inline executor.
 */
async function once<T>(key: string, fn: () => T | Promise<T>): Promise<Awaited<T>> {
  const db = currentAttemptStore();
  if (!taskContextStorage.getStore() || !db) {
    throw new AxDefinitionError(
      "ax.once() was called outside a running task; it needs the worker's database and is only available while an inline-executor attempt runs",
    );
  }
  if (typeof key !== "string" || key.length === 0) throw new AxDefinitionError("ax.once(key, fn) needs a non-empty string key");
  if (typeof fn !== "function") throw new AxDefinitionError(`ax.once("${key}", fn) needs a function as its second argument`);
  const outcome = await runOnce(db, key, fn);
  return outcome.result as Json as Awaited<T>;
}

export const ax = {
  task: defineTask,
  flow: defineFlow,
  context,
  once,
  onEvent,
};
