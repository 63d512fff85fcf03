/** The API's shapes the console reads (docs/api.md, "Shapes"). */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type RunStatus = "pending" | "running" | "success" | "failed" | "cancelled";
export type TaskStatus = "pending" | "queued" | "running" | "retrying" | "success" | "failed" | "skipped" | "cancelled";
export type Trigger = "manual" | "event" | "schedule" | "rerun" | "backfill";

export interface ErrorInfo {
  name: string;
  message: string;
  stack: string | null;
}

export interface AttemptInfo {
  n: number;
  worker: string;
  startedAt: string;
  finishedAt: string | null;
  outcome: string | null;
  error: ErrorInfo | null;
  /** On a running attempt whose worker missed two heartbeats: for how long, whole seconds as ms; null otherwise. */
  workerSilentMs: number | null;
}

export interface TaskRunInfo {
  key: string;
  task: string;
  queue: string;
  upstream: string[];
  status: TaskStatus;
  attempts: AttemptInfo[];
  result: Json;
  /** `notifyOnly`: failed for good under onFailure notify_only; the run's outcome ignores it. */
  error: (ErrorInfo & { notRetried: string | null; notifyOnly: boolean }) | null;
  progress: Json;
  nextRetryAt: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  reusedFrom: string | null;
  waitingFor: string | null;
}

export interface RunSummary {
  id: string;
  flow: string;
  flowVersion: number;
  status: RunStatus;
  trigger: Trigger;
  businessKey: string | null;
  idempotencyKey: string | null;
  logicalDate: string | null;
  rerunOf: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}

/** A card of the Flows page: GET /api/flow-overview. */
export interface FlowOverview {
  name: string;
  version: number;
  nodes: number;
  /** Live processes whose code defines it: 0 once its code is gone (it may then be retired). */
  definedBy: number;
  /** Newest first. */
  recentRuns: RunSummary[];
}

export interface RunInfo extends RunSummary {
  payload: Json;
  waitingFor: string | null;
  tasks: TaskRunInfo[];
}

export interface FlowDescription {
  name: string;
  version: number;
  nodes: { key: string; task: string; queue: string; upstream: string[] }[];
  edges: { from: string; to: string }[];
  schedule: string | { cron: string; timezone?: string } | null;
  /** When `ax flow retire` took it out of use; null while in use. */
  retiredAt: string | null;
  /** Live processes whose code defines it. */
  definedBy: number;
}

export interface ScheduleInfo {
  flow: string;
  cron: string;
  timezone: string;
  paused: boolean;
  nextFireTimes: string[];
  /** The newest fire time a minute or more ago with no tick: no coordinator ticks the flow. */
  overdueSince: string | null;
  lastTick: {
    logicalDate: string;
    /** created, queued (waits for the earlier run: `overlap: queue`) or skipped (`reason` says why). */
    status: string;
    reason: string | null;
    runId: string | null;
    runStatus: RunStatus | null;
  } | null;
}

export interface LogLine {
  node: string;
  attempt: number;
  seq: number;
  at: string;
  level: "debug" | "info" | "warn" | "error";
  msg: string;
  fields: Record<string, Json> | null;
}

export interface WorkerInfo {
  id: string;
  hostname: string;
  pid: number;
  queues: string[];
  configVersion: number | null;
  heartbeatAt: string;
  live: boolean;
  running: number;
  /** Its slots (`maxConcurrency`); null for a worker older than 0.9. */
  concurrency: number | null;
}

/** A process of the cluster and the config version it applies (`GET /api/config/cluster`). */
export interface ProcessInfo {
  id: string;
  hostname: string;
  pid: number;
  roles: string[];
  queues: string[];
  configVersion: number | null;
  concurrency: number | null;
  heartbeatAt: string;
  live: boolean;
}

export interface QueueInfo {
  name: string;
  group: string;
  task: string;
  waiting: number;
  active: number;
  delayed: number;
  limited: string | null;
  workers: number;
  slots: { running: number; capacity: number | null };
}

export interface EffectiveOption {
  option: string;
  value: Json;
  source: string;
}

export interface ConfigVersionInfo {
  version: number;
  author: string;
  file: string;
  createdAt: string;
  yaml: string;
  diff: string;
}

export interface ConfigHistoryEntry {
  version: number;
  author: string;
  file: string;
  createdAt: string;
  added: number;
  removed: number;
}

/** One entry of GET /api/alerts. */
export interface SentAlert {
  id: number;
  sentAt: string;
  group: string;
  kind: string;
  flow: string;
  runId: string | null;
  alert: { summary: string; task: string | null; suppressed: number };
  deliveries: { sink: string; target: string; ok: boolean; error?: string }[];
}

/** One entry of GET /api/tokens (never the token itself). */
export interface TokenInfo {
  name: string;
  scope: "read" | "trigger" | "admin";
  createdAt: string;
  expiresAt: string | null;
  lastUsedAt: string | null;
}

/** One entry of GET /api/audit: who did what, through the API or the CLI. */
export interface AuditEntry {
  id: number;
  at: string;
  actor: string;
  action: string;
  target: string | null;
  ip: string | null;
  detail: unknown;
}

/** One entry of GET /api/alerts/mutes: an operator's mute of a group's alerts. */
export interface AlertMute {
  id: number;
  group: string;
  flow: string | null;
  task: string | null;
  until: string;
  createdBy: string;
  reason: string | null;
}

/** `GET /api/backfills`: one backfill's range and progress. */
export interface BackfillInfo {
  id: string;
  flow: string;
  from: string;
  to: string;
  maxConcurrentRuns: number;
  status: "active" | "finished" | "cancelled";
  createdAt: string;
  ticks: number;
  done: number;
  succeeded: number;
  failed: number;
  cancelled: number;
  pruned: number;
  running: number;
  waiting: number;
}
