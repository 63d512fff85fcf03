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
