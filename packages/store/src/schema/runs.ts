import { sql } from "drizzle-orm";
import { index, integer, jsonb, pgTable, primaryKey, serial, text, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import type { FlowDag } from "../dag.js";
import type { AttemptOutcome, Json, RunStatus, RunTrigger, TaskFailure, TaskStatus } from "../types.js";
import { at } from "./columns.js";

export const flowDefinitions = pgTable(
  "flow_definitions",
  {
    id: serial("id").primaryKey(),
    name: text("name").notNull(),
    version: integer("version").notNull(),
    hash: text("hash").notNull(),
    dag: jsonb("dag").$type<FlowDag>().notNull(),
    createdAt: at("created_at").defaultNow().notNull(),
    /**
     * When a process last brought this graph into use: at its first registration, and again when a
     * process registers it while another version is current (a code rollback). The flow's current
     * version, the one new runs get, is the one registered last.
     */
    registeredAt: at("registered_at").defaultNow().notNull(),
  },
  (t) => [uniqueIndex("flow_definitions_name_version").on(t.name, t.version), uniqueIndex("flow_definitions_name_hash").on(t.name, t.hash)],
);

export const runs = pgTable(
  "runs",
  {
    id: uuid("id").primaryKey(),
    flow: text("flow").notNull(),
    /** A `flow_definitions` id. Not a foreign key, like the run's nodes and attempts (see `nodeRuns`). */
    flowVersionId: integer("flow_version_id").notNull(),
    status: text("status").$type<RunStatus>().notNull(),
    trigger: text("trigger").$type<RunTrigger>().notNull(),
    payload: jsonb("payload").$type<Json>(),
    businessKey: text("business_key"),
    idempotencyKey: text("idempotency_key"),
    logicalDate: at("logical_date"),
    rerunOf: uuid("rerun_of"),
    /**
     * For a rerun, the run its chain of reruns started from (`rerun_of` followed back), fixed when
     * it is written: its nodes' idempotency keys name it, even once retention pruned the chain.
     */
    rerunRoot: uuid("rerun_root"),
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
    // Partial: most runs end in success, and a lookup of that status reads the runs by creation
    // time instead (nearly every one matches). The rest (unfinished runs for the limits and
    // overlap checks, failed and cancelled ones for the lists) are few, and a run's last update
    // to success writes no entry here.
    index("runs_status").on(t.status).where(sql`${t.status} <> 'success'`),
    // Partial: a run without a business key writes nothing to it, on its insert and on each of its
    // updates (every index of `runs` gets a new entry when the status changes); a lookup by key
    // (`business_key = $1`) implies the key is not null, so it still uses this index.
    index("runs_business_key").on(t.businessKey).where(sql`${t.businessKey} is not null`),
    // A backfill finds each tick's runs by date. Partial: a run without a logical date (every
    // triggered one) writes nothing to it.
    index("runs_flow_logical_date").on(t.flow, t.logicalDate).where(sql`${t.logicalDate} is not null`),
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

/**
 * Neither this table nor `attempts` has a foreign key to its parent: every row is written by the
 * statement that writes or fences its parent, and one check per inserted row cost PostgreSQL
 * about 7 µs and a row-lock record on the parent (a tenth of a task's CPU there). Retention
 * deletes the children itself.
 */
export const nodeRuns = pgTable(
  "node_runs",
  {
    runId: uuid("run_id").notNull(),
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
  (t) => [primaryKey({ columns: [t.runId, t.nodeKey, t.n] })],
);

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
  /**
   * The run whose attempt claimed the key (kept once its result is stored): retention keeps the
   * keys of runs still unfinished, or a retry past the cutoff would run `fn` again.
   */
  runId: uuid("run_id"),
});

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
