export type AxEventName =
  | "run_started"
  | "run_succeeded"
  | "run_failed"
  | "run_cancelled"
  | "task_started"
  | "task_succeeded"
  | "task_retrying"
  | "task_failed"
  | "task_timed_out"
  | "schedule_skipped";

export interface AxEvent {
  /** The event's Redis Stream entry id: unique in the cluster and increasing, the key to de-duplicate on. */
  id: string;
  name: AxEventName;
  /** Empty for `schedule_skipped`, which has no run. */
  runId: string;
  flow: string;
  businessKey: string | null;
  nodeKey?: string;
  task?: string;
  attempt?: number;
  /** Task events: the task's `alertGroup` option, when it has one. */
  alertGroup?: string;
  /** `task_failed`, `task_retrying`, `task_timed_out`: the attempt's error; `run_failed`: the error of the node that failed the run. */
  error?: { name: string; message: string };
  /** `task_retrying`: when the next attempt is due (ISO time). */
  nextRetryAt?: string;
  /** `schedule_skipped`: the tick's logical date and why no run was created. */
  logicalDate?: string;
  reason?: string;
  at: string;
}

/** What a process raises; the stream gives it its id. */
export type NewAxEvent = Omit<AxEvent, "id" | "at">;

/** The cluster's event stream (one per queue prefix). */
export function eventStreamKey(prefix: string): string {
  return `${prefix}:ax:events`;
}

/** A stream entry's single field holds the event as JSON. */
export const EVENT_FIELD = "e";

/** Parses one stream entry (`[id, [field, value, ...]]`); undefined for one that is not an event. */
export function parseEntry(entry: [string, string[]]): AxEvent | undefined {
  const [id, fields] = entry;
  const at = fields.indexOf(EVENT_FIELD);
  if (at < 0 || at % 2 !== 0) return undefined;
  try {
    // The parsed object is the event: spreading it into another to add the id costs about 0.5 µs an event.
    const event = JSON.parse(fields[at + 1]!) as AxEvent;
    event.id = id;
    return event;
  } catch {
    return undefined;
  }
}
