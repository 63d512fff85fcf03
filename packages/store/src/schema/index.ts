import { sql } from "drizzle-orm";
import {
  boolean,
  bigserial,
  foreignKey,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  serial,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from "drizzle-orm/pg-core";
import type { FlowDag } from "../dag.js";
import type { AttemptOutcome, CatchUp, Json, Overlap, RunStatus, RunTrigger, TaskFailure, TaskStatus, TickStatus } from "../types.js";

const at = (name: string) => timestamp(name, { withTimezone: true, mode: "date" });

export const flowDefinitions = pgTable(
  "flow_definitions",
  {
    id: serial("id").primaryKey(),
    name: text("name").notNull(),
    version: integer("version").notNull(),
    hash: text("hash").notNull(),
    dag: jsonb("dag").$type<FlowDag>().notNull(),
    createdAt: at("created_at").defaultNow().notNull(),
  },
  (t) => [uniqueIndex("flow_definitions_name_version").on(t.name, t.version), uniqueIndex("flow_definitions_name_hash").on(t.name, t.hash)],
);

export const runs = pgTable(
  "runs",
  {
    id: uuid("id").primaryKey(),
    flow: text("flow").notNull(),
    flowVersionId: integer("flow_version_id")
      .notNull()
      .references(() => flowDefinitions.id),
    status: text("status").$type<RunStatus>().notNull(),
    trigger: text("trigger").$type<RunTrigger>().notNull(),
    payload: jsonb("payload").$type<Json>(),
    businessKey: text("business_key"),
    idempotencyKey: text("idempotency_key"),
    logicalDate: at("logical_date"),
    rerunOf: uuid("rerun_of"),
    /** BullMQ priority of every job of the run (1 = highest); null = BullMQ's default. */
    priority: integer("priority"),
    /** When the run's first nodes become due (trigger option `delay` / `runAt`); null = at once. */
    runAt: at("run_at"),
    /** Nodes not yet terminal; the run finishes when it reaches 0. */
    nodesRemaining: integer("nodes_remaining").notNull(),
    /** Failed nodes whose failure fails the run (onFailure "fail"). */
    blockingFailures: integer("blocking_failures").notNull().default(0),
    /** The write's own clock, not its transaction's start: a transaction that waited on a lock does not date its run earlier. */
    createdAt: at("created_at").default(sql`clock_timestamp()`).notNull(),
    startedAt: at("started_at"),
    finishedAt: at("finished_at"),
  },
  (t) => [
    // Run lists page by keyset on (created_at, id), newest first. NULLS FIRST is what ORDER BY … DESC
    // means: an index declared NULLS LAST cannot give that order and every page would sort the history.
    index("runs_flow_created").on(t.flow, t.createdAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
    index("runs_created_id").on(t.createdAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
    index("runs_status").on(t.status),
    index("runs_business_key").on(t.businessKey),
  ],
);

export const idempotencyKeys = pgTable(
  "idempotency_keys",
  {
    flow: text("flow").notNull(),
    key: text("key").notNull(),
    runId: uuid("run_id")
      .notNull()
      .references(() => runs.id, { onDelete: "cascade" }),
    createdAt: at("created_at").defaultNow().notNull(),
  },
  // Deleting a run (retention) looks its keys up by run: without this, once per run over the whole table.
  (t) => [primaryKey({ columns: [t.flow, t.key] }), index("idempotency_keys_run").on(t.runId)],
);

export const nodeRuns = pgTable(
  "node_runs",
  {
    runId: uuid("run_id")
      .notNull()
      .references(() => runs.id, { onDelete: "cascade" }),
    nodeKey: text("node_key").notNull(),
    task: text("task").notNull(),
    queue: text("queue").notNull(),
    status: text("status").$type<TaskStatus>().notNull(),
    /** Upstream nodes not yet succeeded; decremented under the row lock, ready at 0. */
    depsRemaining: integer("deps_remaining").notNull(),
    /** Number of the current (or last) attempt; 0 before the first. */
    attempt: integer("attempt").notNull().default(0),
    result: jsonb("result").$type<Json>(),
    error: jsonb("error").$type<TaskFailure>(),
    progress: jsonb("progress").$type<Json>(),
    /** Set on a rerun's node carried over, not executed: the run whose stored result it holds. */
    reusedFrom: uuid("reused_from"),
    nextRetryAt: at("next_retry_at"),
    queuedAt: at("queued_at"),
    startedAt: at("started_at"),
    finishedAt: at("finished_at"),
  },
  (t) => [
    primaryKey({ columns: [t.runId, t.nodeKey] }),
    index("node_runs_in_flight").on(t.status, t.queuedAt).where(sql`${t.status} in ('queued', 'retrying', 'running')`),
  ],
);

export const attempts = pgTable(
  "attempts",
  {
    runId: uuid("run_id").notNull(),
    nodeKey: text("node_key").notNull(),
    n: integer("n").notNull(),
    worker: text("worker").notNull(),
    startedAt: at("started_at").notNull(),
    finishedAt: at("finished_at"),
    outcome: text("outcome").$type<AttemptOutcome>(),
    error: jsonb("error").$type<TaskFailure>(),
    /** Set when its worker could not record the outcome in time and gave it up to the reconciler. */
    abandonedAt: at("abandoned_at"),
  },
  (t) => [
    primaryKey({ columns: [t.runId, t.nodeKey, t.n] }),
    foreignKey({ columns: [t.runId, t.nodeKey], foreignColumns: [nodeRuns.runId, nodeRuns.nodeKey] }).onDelete("cascade"),
  ],
);

/** Live worker processes; an attempt whose worker stopped heartbeating is presumed crashed. */
export const workers = pgTable("workers", {
  id: text("id").primaryKey(),
  hostname: text("hostname").notNull(),
  pid: integer("pid").notNull(),
  queues: text("queues").array().notNull(),
  startedAt: at("started_at").defaultNow().notNull(),
  heartbeatAt: at("heartbeat_at").defaultNow().notNull(),
  /** The `config_versions` version this process applies, as of its last heartbeat; null = none stored yet. */
  configVersion: integer("config_version"),
});

/**
 * `ax.once(key, fn)`: the first result stored under a key is the only one. While `fn` runs the
 * row is a claim (`claimed_by` set, renewed until `lease_until`); completing stores `result` and
 * clears `claimed_by`, so a row without a claimant is done (rows from before claims included).
 */
export const onceKeys = pgTable("once_keys", {
  key: text("key").primaryKey(),
  result: jsonb("result").$type<Json>(),
  createdAt: at("created_at").defaultNow().notNull(),
  /** `run/node/attempt@worker#call` of the call running `fn`; null once the result is stored. */
  claimedBy: text("claimed_by"),
  /** PostgreSQL time after which another attempt may take the claim over. */
  leaseUntil: at("lease_until"),
  completedAt: at("completed_at"),
});

/**
 * A flow's cron schedule, registered by coordinators from code and YAML at start. `paused` is
 * set only by pause/resume, so it survives restarts and re-registration.
 */
export const schedules = pgTable("schedules", {
  flow: text("flow").primaryKey(),
  cron: text("cron").notNull(),
  timezone: text("timezone").notNull(),
  overlap: text("overlap").$type<Overlap>().notNull(),
  catchUp: text("catch_up").$type<CatchUp>().notNull(),
  maxCatchUp: integer("max_catch_up").notNull(),
  paused: boolean("paused").notNull().default(false),
  /** When it was last resumed: catch-up never reaches back past it into the paused time. */
  resumedAt: at("resumed_at"),
  updatedAt: at("updated_at").defaultNow().notNull(),
});

/** At most `max` runs of a flow at once per business key, read from the payload at `key` (a dotted path). */
export interface FlowConcurrency {
  max: number;
  key: string;
  strategy: "queue" | "cancel_in_progress" | "cancel_newest";
}

/** Per-flow settings the coordinators act on, written by every Runtime when it registers its flows. */
export const flowSettings = pgTable("flow_settings", {
  flow: text("flow").primaryKey(),
  /** Runs of the flow `pending`/`running` at once (held ones not counted); null = no cap. */
  maxConcurrentRuns: integer("max_concurrent_runs"),
  /** The flow's `schedule` option as defined (`"cron"` or `{ cron, timezone }`); null = none. */
  schedule: jsonb("schedule").$type<string | { cron: string; timezone?: string }>(),
  /** The flow's `concurrency: { max, key, strategy }`: runs at once per business key (a dotted path into the payload); null = none. */
  concurrency: jsonb("concurrency").$type<FlowConcurrency>(),
  updatedAt: at("updated_at").defaultNow().notNull(),
});

/**
 * One row per schedule tick: the unique (flow, logical date) is what makes a tick run once
 * however many coordinators see it. `queued` with no run yet waits for the earlier run to end.
 */
export const scheduleTicks = pgTable(
  "schedule_ticks",
  {
    flow: text("flow").notNull(),
    logicalDate: at("logical_date").notNull(),
    status: text("status").$type<TickStatus>().notNull(),
    reason: text("reason"),
    runId: uuid("run_id"),
    createdAt: at("created_at").defaultNow().notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.flow, t.logicalDate] }),
    index("schedule_ticks_waiting").on(t.flow).where(sql`${t.status} = 'queued' and ${t.runId} is null`),
  ],
);

/**
 * Runs written with their nodes but not dispatched yet (over `maxConcurrentRuns`, or a backfill's
 * cap). Admission releases them oldest `seq` first; a run without a row here is admitted.
 */
export const heldRuns = pgTable(
  "held_runs",
  {
    seq: bigserial("seq", { mode: "number" }).primaryKey(),
    runId: uuid("run_id")
      .notNull()
      .references(() => runs.id, { onDelete: "cascade" }),
    flow: text("flow").notNull(),
    backfillId: uuid("backfill_id"),
  },
  (t) => [uniqueIndex("held_runs_run").on(t.runId), index("held_runs_flow_seq").on(t.flow, t.seq)],
);

/** `client.backfill(flow, { from, to })`: one run per schedule tick in [from, to). */
export const backfills = pgTable("backfills", {
  id: uuid("id").primaryKey(),
  flow: text("flow").notNull(),
  rangeFrom: at("range_from").notNull(),
  rangeTo: at("range_to").notNull(),
  maxConcurrentRuns: integer("max_concurrent_runs").notNull(),
  ticks: integer("ticks").notNull(),
  status: text("status").$type<"active" | "cancelled">().notNull(),
  createdAt: at("created_at").defaultNow().notNull(),
  cancelledAt: at("cancelled_at"),
});

/** The runs of a backfill's ticks (a tick another backfill already ran is linked, not run again). */
export const backfillRuns = pgTable(
  "backfill_runs",
  {
    backfillId: uuid("backfill_id")
      .notNull()
      .references(() => backfills.id, { onDelete: "cascade" }),
    runId: uuid("run_id")
      .notNull()
      .references(() => runs.id, { onDelete: "cascade" }),
    logicalDate: at("logical_date").notNull(),
  },
  (t) => [primaryKey({ columns: [t.backfillId, t.runId] }), index("backfill_runs_run").on(t.runId)],
);

/**
 * `runtime.yaml` as applied with `ax config apply`, one row per version: every Runtime applies the
 * newest. Rolling back stores an older version's text as a new version, so versions only grow.
 */
export const configVersions = pgTable("config_versions", {
  version: serial("version").primaryKey(),
  yaml: text("yaml").notNull(),
  /** The validated overrides, durations in ms (what `GET /api/config` shows). */
  parsed: jsonb("parsed").$type<Json>().notNull(),
  author: text("author").notNull(),
  /** The file it was applied from, as the author named it (error messages and history). */
  file: text("file").notNull(),
  createdAt: at("created_at").defaultNow().notNull(),
});

/**
 * Each task's and flow's options as its code sets them (JSON: error classes by name), written by
 * every Runtime at start, so `ax config show` can tell code from YAML and defaults without the code.
 */
export const codeOptions = pgTable(
  "code_options",
  {
    kind: text("kind").$type<"task" | "flow">().notNull(),
    name: text("name").notNull(),
    options: jsonb("options").$type<Record<string, Json>>().notNull(),
    updatedAt: at("updated_at").defaultNow().notNull(),
  },
  (t) => [primaryKey({ columns: [t.kind, t.name] })],
);

/**
 * One row per alert key (kind, flow, task, error fingerprint): when it was last sent, and how many
 * were held back since. Claiming a send is one upsert, so N coordinators send one alert per key
 * per silence window.
 */
export const alertDedupe = pgTable(
  "alert_dedupe",
  {
    kind: text("kind").notNull(),
    flow: text("flow").notNull(),
    task: text("task").notNull(),
    fingerprint: text("fingerprint").notNull(),
    lastSentAt: at("last_sent_at").notNull(),
    /** Alerts of this key held back since the last one sent. */
    suppressed: integer("suppressed").notNull().default(0),
    /** The claim that sent last: a claimant knows it won when it reads its own token back. */
    claim: uuid("claim").notNull(),
  },
  (t) => [primaryKey({ columns: [t.kind, t.flow, t.task, t.fingerprint] })],
);

/** Terminal failures of a task in a row (reset by its next success), and whether an alert went out for them (recovery notice). */
export const alertStreaks = pgTable(
  "alert_streaks",
  {
    flow: text("flow").notNull(),
    task: text("task").notNull(),
    failures: integer("failures").notNull(),
    alerted: boolean("alerted").notNull().default(false),
    updatedAt: at("updated_at").defaultNow().notNull(),
  },
  (t) => [primaryKey({ columns: [t.flow, t.task] })],
);

/** Task log levels as stored (pino's trace and fatal fold into debug and error). */
export type TaskLogLevel = "debug" | "info" | "warn" | "error";

/**
 * `ax.context().log` lines, per attempt, bounded by the worker (500 lines / 64 KiB). No foreign
 * key: lines are written in batches after the fact and must not slow or fail the attempt's own
 * writes; retention deletes them with their run.
 */
export const attemptLogs = pgTable(
  "attempt_logs",
  {
    runId: uuid("run_id").notNull(),
    nodeKey: text("node_key").notNull(),
    attempt: integer("attempt").notNull(),
    /** 1, 2, … within the attempt. */
    seq: integer("seq").notNull(),
    at: at("at").notNull(),
    level: text("level").$type<TaskLogLevel>().notNull(),
    msg: text("msg").notNull(),
    fields: jsonb("fields").$type<Json>(),
    /** Set on the attempt's last line only when lines past the bound were dropped: how many. */
    dropped: integer("dropped"),
  },
  (t) => [primaryKey({ columns: [t.runId, t.nodeKey, t.attempt, t.seq] })],
);

/*
 * Retention's archive (`ax prune --archive`): the pruned rows with the same columns plus when
 * they were archived. No keys or foreign keys, so archiving never fails on what it copies.
 */
const archivedAt = () => at("archived_at").defaultNow().notNull();

export const runsArchive = pgTable(
  "runs_archive",
  {
    id: uuid("id").notNull(),
    flow: text("flow").notNull(),
    flowVersionId: integer("flow_version_id").notNull(),
    status: text("status").$type<RunStatus>().notNull(),
    trigger: text("trigger").$type<RunTrigger>().notNull(),
    payload: jsonb("payload").$type<Json>(),
    businessKey: text("business_key"),
    idempotencyKey: text("idempotency_key"),
    logicalDate: at("logical_date"),
    rerunOf: uuid("rerun_of"),
    priority: integer("priority"),
    runAt: at("run_at"),
    nodesRemaining: integer("nodes_remaining").notNull(),
    blockingFailures: integer("blocking_failures").notNull(),
    createdAt: at("created_at").notNull(),
    startedAt: at("started_at"),
    finishedAt: at("finished_at"),
    archivedAt: archivedAt(),
  },
  (t) => [index("runs_archive_id").on(t.id), index("runs_archive_flow_created").on(t.flow, t.createdAt)],
);

export const nodeRunsArchive = pgTable(
  "node_runs_archive",
  {
    runId: uuid("run_id").notNull(),
    nodeKey: text("node_key").notNull(),
    task: text("task").notNull(),
    queue: text("queue").notNull(),
    status: text("status").$type<TaskStatus>().notNull(),
    depsRemaining: integer("deps_remaining").notNull(),
    attempt: integer("attempt").notNull(),
    result: jsonb("result").$type<Json>(),
    error: jsonb("error").$type<TaskFailure>(),
    progress: jsonb("progress").$type<Json>(),
    reusedFrom: uuid("reused_from"),
    nextRetryAt: at("next_retry_at"),
    queuedAt: at("queued_at"),
    startedAt: at("started_at"),
    finishedAt: at("finished_at"),
    archivedAt: archivedAt(),
  },
  (t) => [index("node_runs_archive_run").on(t.runId)],
);

export const attemptsArchive = pgTable(
  "attempts_archive",
  {
    runId: uuid("run_id").notNull(),
    nodeKey: text("node_key").notNull(),
    n: integer("n").notNull(),
    worker: text("worker").notNull(),
    startedAt: at("started_at").notNull(),
    finishedAt: at("finished_at"),
    outcome: text("outcome").$type<AttemptOutcome>(),
    error: jsonb("error").$type<TaskFailure>(),
    abandonedAt: at("abandoned_at"),
    archivedAt: archivedAt(),
  },
  (t) => [index("attempts_archive_run").on(t.runId)],
);

export const attemptLogsArchive = pgTable(
  "attempt_logs_archive",
  {
    runId: uuid("run_id").notNull(),
    nodeKey: text("node_key").notNull(),
    attempt: integer("attempt").notNull(),
    seq: integer("seq").notNull(),
    at: at("at").notNull(),
    level: text("level").$type<TaskLogLevel>().notNull(),
    msg: text("msg").notNull(),
    fields: jsonb("fields").$type<Json>(),
    dropped: integer("dropped"),
    archivedAt: archivedAt(),
  },
  (t) => [index("attempt_logs_archive_run").on(t.runId)],
);

/**
 * API tokens. Only the SHA-256 of the secret part is stored (see docs/security.md for why not a
 * slow hash); `id` is the public part of the token, so a request finds its row without a scan.
 */
export const apiTokens = pgTable("api_tokens", {
  id: text("id").primaryKey(),
  name: text("name").notNull().unique(),
  scope: text("scope").$type<"read" | "trigger" | "admin">().notNull(),
  hash: text("hash").notNull(),
  createdAt: at("created_at").defaultNow().notNull(),
  expiresAt: at("expires_at"),
  lastUsedAt: at("last_used_at"),
});

/** Who changed what through the API (and token management), when and from where. */
export const auditLog = pgTable(
  "audit_log",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    at: at("at").defaultNow().notNull(),
    /** The token's name; `cli:<os user>` for token commands run on the storage directly; `anonymous` without auth. */
    actor: text("actor").notNull(),
    action: text("action").notNull(),
    /** What it acted on: a run id, flow name, backfill id, token name, config version. */
    target: text("target"),
    ip: text("ip"),
    detail: jsonb("detail").$type<Json>(),
  },
  (t) => [index("audit_log_at_idx").on(t.at)],
);
