import { index, integer, jsonb, pgTable, text, uuid } from "drizzle-orm/pg-core";
import type { AttemptOutcome, Json, RunStatus, RunTrigger, TaskFailure, TaskStatus } from "../types.js";
import { at } from "./columns.js";
import type { TaskLogLevel } from "./runs.js";

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
    rerunRoot: uuid("rerun_root"),
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
