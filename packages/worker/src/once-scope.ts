import { AsyncLocalStorage } from "node:async_hooks";
import type { Db } from "@ax/store";

/**
 * The store of the worker running the current attempt, for `ax.once`. Kept apart from the public
 * `TaskContext` so a task sees a capability, not a database handle; per attempt rather than per
 * process because one process may host several runtimes on different databases.
 */
const attemptStore = new AsyncLocalStorage<Db>();

export function withAttemptStore<T>(db: Db, fn: () => Promise<T>): Promise<T> {
  return attemptStore.run(db, fn);
}

/** The running attempt's store; undefined outside an attempt run by this process's event loop. */
export function currentAttemptStore(): Db | undefined {
  return attemptStore.getStore();
}
