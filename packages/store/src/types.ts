export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export { RUN_STATUSES, RUN_TRIGGERS, TERMINAL_RUN_STATUSES, type RunStatus, type RunTrigger } from "@ax/common";

export const TASK_STATUSES = ["pending", "queued", "running", "success", "retrying", "failed", "skipped", "cancelled"] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

export const ATTEMPT_OUTCOMES = ["success", "failed", "timed_out", "heartbeat_lost", "crashed"] as const;
export type AttemptOutcome = (typeof ATTEMPT_OUTCOMES)[number];

/** How an attempt failed, as stored in history; made by `toTaskFailure()` in the worker. */
export interface TaskFailure {
  name: string;
  message: string;
  stack: string | null;
  kind: "error" | "timeout" | "heartbeat_lost" | "crashed" | "resource";
  /** On a node's final failure: why no further attempt followed ("no retries left (retries: 3)", "error is not in retryOn"). */
  notRetried?: string;
  /** Set on the final failure of an `onFailure: "notify_only"` node: the run's outcome ignores it. */
  notifyOnly?: true;
}

export const TERMINAL_TASK_STATUSES: readonly TaskStatus[] = ["success", "failed", "skipped", "cancelled"];

export const OVERLAP_POLICIES = ["skip", "queue", "allow", "cancel_previous"] as const;
/** What a schedule tick does when an earlier run of its flow is unfinished. */
export type Overlap = (typeof OVERLAP_POLICIES)[number];

export const CATCH_UP_POLICIES = ["none", "latest", "all"] as const;
/** Which ticks missed while no coordinator ran are run when one starts. */
export type CatchUp = (typeof CATCH_UP_POLICIES)[number];

export const TICK_STATUSES = ["created", "skipped", "queued"] as const;
export type TickStatus = (typeof TICK_STATUSES)[number];
