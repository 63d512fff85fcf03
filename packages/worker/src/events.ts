import { EventEmitter } from "node:events";

export type AxEventName =
  | "run_started"
  | "run_succeeded"
  | "run_failed"
  | "task_started"
  | "task_succeeded"
  | "task_retrying"
  | "task_failed"
  | "task_timed_out";

export interface AxEvent {
  name: AxEventName;
  runId: string;
  flow: string;
  businessKey: string | null;
  nodeKey?: string;
  task?: string;
  attempt?: number;
  error?: { name: string; message: string };
  at: string;
}

const bus = new EventEmitter();
bus.setMaxListeners(0);

/** Subscribes to lifecycle events raised in this process; returns the unsubscribe function. */
export function onEvent(listener: (event: AxEvent) => void | Promise<void>): () => void {
  const safe = (event: AxEvent) => {
    // A listener's failure must never fail the attempt that raised the event.
    Promise.resolve()
      .then(() => listener(event))
      .catch(() => {});
  };
  bus.on("event", safe);
  return () => bus.off("event", safe);
}

export function emitEvent(event: Omit<AxEvent, "at">): void {
  if (bus.listenerCount("event") === 0) return;
  bus.emit("event", { ...event, at: new Date().toISOString() });
}
