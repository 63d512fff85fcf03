import { AsyncLocalStorage } from "node:async_hooks";
import type { Json } from "@ax/store";
import type { Logger } from "pino";
import { AxDefinitionError, processWide } from "@ax/common";

/** What `ax.context()` gives a running task. */
export interface TaskContext {
  runId: string;
  flow: string;
  task: string;
  nodeKey: string;
  attempt: number;
  /**
   * `originalRunId:nodeKey` (the run's id, or for a rerun its chain's first run): the same across
   * retries and reruns of this node, so side effects keyed by it happen once.
   */
  idempotencyKey: string;
  businessKey: string | null;
  /** The schedule tick this run is for (ISO 8601); null for runs not started by a schedule. */
  logicalDate: string | null;
  /** Aborts on timeout, lost heartbeat or cancel. */
  signal: AbortSignal;
  /**
   * Keeps a task with `heartbeatTimeout` alive; `progress` is stored on the node. Progress that is
   * not plain JSON PostgreSQL can store throws AxNotJsonError, and that call keeps nothing alive.
   */
  heartbeat(progress?: Json): void;
  log: Logger;
}

/** The plain-data part of the context: what crosses into a thread or process child. */
export type AttemptIdentity = Omit<TaskContext, "signal" | "heartbeat" | "log">;

/** An attempt's context, and whether its function has settled (only leftover work can still see it then). */
interface HeldContext {
  context: TaskContext;
  settled: boolean;
}

const storage = processWide("context", () => new AsyncLocalStorage<HeldContext>());

/**
 * Where `ax.context()` and `ax.once()` find the running attempt. `getStore()` is undefined
 * outside any attempt, and throws in work an attempt's function left running after it settled:
 * timers and promises made during the attempt keep its storage for good, so without the mark
 * such work would act for an attempt that has ended (write its logs, claim `ax.once` keys).
 */
export const taskContextStorage = {
  getStore(): TaskContext | undefined {
    const held = storage.getStore();
    if (held?.settled) throw attemptEnded(held.context);
    return held?.context;
  },
};

function attemptEnded({ runId, nodeKey, attempt }: TaskContext): AxDefinitionError {
  return new AxDefinitionError(
    `ax.context() or ax.once() was called after its attempt already ended (run ${runId}, node "${nodeKey}", attempt ${attempt}): ` +
      "work a task function leaves running once it has returned or thrown has no context. Await that work inside the function, " +
      "or read what it needs from ax.context() before returning.",
  );
}

/**
 * Runs `fn` with `context` as `ax.context()`. An attempt's `signal` is aborted from outside it (a
 * cancel message, a timer), so its abort listeners would otherwise run with no context, and one
 * that calls `ax.context()` would throw out of the abort and crash the process.
 */
export function withTaskContext<T>(context: TaskContext, fn: () => T): T {
  return storage.run({ context, settled: false }, fn);
}

/** Task functions called through `runInTaskContext` whose promise has not settled yet. */
let pendingTaskFunctions = 0;

/**
 * Calls a task's function with `context` as `ax.context()`. While any AsyncLocalStorage is
 * enabled, Node 20 runs a hook on every promise the process makes, ax's own Redis and
 * PostgreSQL traffic included; the storage is therefore enabled only while some task function is
 * pending, and a worker running short tasks mostly does without the hooks. Re-enabling it gives
 * earlier attempts' leftover work their contexts back, hence the per-attempt `settled` mark.
 */
export function runInTaskContext<T>(context: TaskContext, fn: () => T | Promise<T>): Promise<T> {
  pendingTaskFunctions += 1;
  const held: HeldContext = { context, settled: false };
  const settled = () => {
    held.settled = true;
    pendingTaskFunctions -= 1;
    if (pendingTaskFunctions === 0) storage.disable();
  };
  const pending = storage.run(held, () => Promise.resolve().then(fn));
  pending.then(settled, settled);
  return pending;
}
