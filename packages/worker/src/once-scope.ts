import { processWide } from "@ax/common";
import { AsyncLocalStorage } from "node:async_hooks";
import type { Db, Json } from "@ax/store";
import type { TaskContext } from "./context.js";
import { claimOnce, onceClaimant } from "./once-claim.js";

/**
 * What the worker running the current attempt lends `ax.once`. Kept apart from the public
 * `TaskContext` so a task sees a capability, not a database handle; per attempt rather than per
 * process because one process may host several runtimes on different databases.
 */
export interface AttemptStore {
  db: Db;
  /** Written into claims, so a stuck key names the worker that holds it. */
  workerId: string;
}

/** A claim `ax.once` holds while `fn` runs, or the key's stored result. */
export type OnceTicket = { done: true; result: Json } | { done: false; complete(result: Json): Promise<Json>; release(): Promise<void> };

/** Where `ax.once` claims keys: the worker's database, or the parent worker of a thread/process child. */
export interface OnceGate {
  /** Resolves once this call holds the key or the key has a stored result; waits while another call holds it. */
  claim(key: string): Promise<OnceTicket>;
}

/** The store of each inline attempt's context, found from the context `ax.once` runs under. */
const attemptStores = processWide("once.attempts", () => new WeakMap<TaskContext, AttemptStore>());
const childGate = processWide("once.gate", () => new AsyncLocalStorage<OnceGate>());

/** Lends `store` to the `ax.once` calls made under `context`. */
export function bindAttemptStore(context: TaskContext, store: AttemptStore): void {
  attemptStores.set(context, store);
}

/** In a thread or process child: `ax.once` asks the parent worker, which holds the database. */
export function withOnceGate<T>(gate: OnceGate, fn: () => Promise<T>): Promise<T> {
  return childGate.run(gate, fn);
}

/** The gate for an `ax.once` call made by the attempt `context`; undefined where none is reachable. */
export function currentOnceGate(context: TaskContext): OnceGate | undefined {
  const viaParent = childGate.getStore();
  if (viaParent) return viaParent;
  const store = attemptStores.get(context);
  if (!store) return undefined;
  return {
    claim: (key) => claimOnce(store.db, key, onceClaimant(context, store.workerId), { signal: context.signal, runId: context.runId }),
  };
}
