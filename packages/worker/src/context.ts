import { AsyncLocalStorage } from "node:async_hooks";
import type { Json } from "@ax/store";
import type { Logger } from "pino";

/** What `ax.context()` gives a running task. */
export interface TaskContext {
  runId: string;
  flow: string;
  task: string;
  nodeKey: string;
  attempt: number;
  /** Stable across retries of this node in this run: use it to make side effects exactly-once. */
  idempotencyKey: string;
  businessKey: string | null;
  /** The schedule tick this run is for (ISO 8601); null for runs not started by a schedule. */
  logicalDate: string | null;
  /** Aborts on timeout, lost heartbeat or cancel. */
  signal: AbortSignal;
  /** Keeps a task with `heartbeatTimeout` alive; `progress` is stored on the node. */
  heartbeat(progress?: Json): void;
  log: Logger;
}

/** The plain-data part of the context: what crosses into a thread or process child. */
export type AttemptIdentity = Omit<TaskContext, "signal" | "heartbeat" | "log">;

export const taskContextStorage = new AsyncLocalStorage<TaskContext>();

/** Task functions called through `runInTaskContext` whose promise has not settled yet. */
let pendingTaskFunctions = 0;

/**
 * Calls a task's function with `context` as `ax.context()`. While any AsyncLocalStorage is
 * enabled, Node 20 runs a hook on every promise the process makes, ax's own Redis and
 * PostgreSQL traffic included; the storage is therefore enabled only while some task function is
 * pending, and a worker running short tasks mostly does without the hooks.
 */
export function runInTaskContext<T>(context: TaskContext, fn: () => T | Promise<T>): Promise<T> {
  pendingTaskFunctions += 1;
  const settled = () => {
    pendingTaskFunctions -= 1;
    if (pendingTaskFunctions === 0) taskContextStorage.disable();
  };
  const pending = taskContextStorage.run(context, () => Promise.resolve().then(fn));
  pending.then(settled, settled);
  return pending;
}
