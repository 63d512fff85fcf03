export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export const RUN_STATUSES = ["pending", "running", "success", "failed", "cancelled"] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

export const TASK_STATUSES = [
  "pending",
  "queued",
  "running",
  "success",
  "retrying",
  "failed",
  "skipped",
  "cancelled",
] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

export const RUN_TRIGGERS = ["manual", "event", "schedule", "rerun", "backfill"] as const;
export type RunTrigger = (typeof RUN_TRIGGERS)[number];

export const ATTEMPT_OUTCOMES = ["success", "failed", "timed_out", "heartbeat_lost", "crashed"] as const;
export type AttemptOutcome = (typeof ATTEMPT_OUTCOMES)[number];

/** How an attempt failed, as stored in history; made by `toTaskFailure()` in the worker. */
export interface TaskFailure {
  name: string;
  message: string;
  stack: string | null;
  kind: "error" | "timeout" | "heartbeat_lost" | "crashed" | "resource";
}

export const TERMINAL_TASK_STATUSES: readonly TaskStatus[] = ["success", "failed", "skipped", "cancelled"];
export const TERMINAL_RUN_STATUSES: readonly RunStatus[] = ["success", "failed", "cancelled"];
