import { assertJson } from "@ax/store";
import { currentOnceGate, onEvent, taskContextStorage, type TaskContext } from "@ax/worker";
import { defineFlow } from "./definition/flow.js";
import { defineTask } from "./definition/task.js";
import { AxDefinitionError } from "@ax/common";

/** The running task's context; throws outside a task attempt. */
function context(): TaskContext {
  const current = taskContextStorage.getStore();
  if (!current) {
    throw new AxDefinitionError(
      "ax.context() was called outside a running task; it is only available while a worker runs an attempt, not in work an attempt left running after it ended (await that work inside the task)",
    );
  }
  return current;
}

/**
 * Runs `fn` at most once per `key` with a stored result, across retries, reruns and workers, and
 * returns its result (the stored one on every later call). Keys are global to the cluster: build
 * them from what makes the effect unique, e.g. `charge:${payment_id}`;
 * `ax.context().idempotencyKey` is the same for a node across its retries and reruns, but differs
 * between runs triggered apart.
 *
 * The first call claims the key in PostgreSQL with a lease the worker renews while `fn` runs; no
 * transaction or connection is held meanwhile, so `fn` may itself use the database (trigger a
 * run, read one). A concurrent call with the same key waits (polling, until its attempt ends)
 * and returns the stored result. If `fn` throws, or its thread/process child is stopped (timeout,
 * cancel), the claim is released and the next attempt runs `fn` again. An inline attempt that
 * ended while `fn` still runs stops renewing, and its claim is taken over once the lease lapses
 * (10 s), as is a dead worker's. So `fn` may run more than once: make its effects outside
 * PostgreSQL idempotent (pass the key on to the API you call). The result must be JSON. Works on every executor: a thread or process child asks its
 * parent worker to claim and store the key.
 */
async function once<T>(key: string, fn: () => T | Promise<T>): Promise<Awaited<T>> {
  const current = taskContextStorage.getStore();
  const gate = current && currentOnceGate(current);
  if (!current || !gate) {
    throw new AxDefinitionError(
      "ax.once() was called outside a running task; it needs the worker's database and is only available while a worker runs an attempt, not in work an attempt left running after it ended (await that work inside the task)",
    );
  }
  if (typeof key !== "string" || key.length === 0) throw new AxDefinitionError("ax.once(key, fn) needs a non-empty string key");
  if (typeof fn !== "function") throw new AxDefinitionError(`ax.once("${key}", fn) needs a function as its second argument`);
  const ticket = await gate.claim(key);
  if (ticket.done) return ticket.result as Awaited<T>;
  try {
    const value = await fn();
    const result = value === undefined ? null : value;
    assertJson(result, `result of ax.once("${key}")`);
    return (await ticket.complete(result)) as Awaited<T>;
  } catch (error) {
    await ticket
      .release()
      .catch((err: unknown) =>
        current.log.warn({ err, key }, "could not release the ax.once claim; it is taken over when its lease lapses"),
      );
    throw error;
  }
}

export const ax = {
  task: defineTask,
  flow: defineFlow,
  context,
  once,
  onEvent,
};
