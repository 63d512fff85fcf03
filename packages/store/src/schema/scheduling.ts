import { sql } from "drizzle-orm";
import { bigserial, boolean, index, integer, jsonb, pgTable, primaryKey, text, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import type { CatchUp, Overlap, TickStatus } from "../types.js";
import { at } from "./columns.js";
import { runs } from "./runs.js";

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
  /**
   * Set when the flow's definition or config dropped its schedule: the row stays, so a pause
   * outlives the schedule's removal and return (a rolling deploy, a config edit in two steps).
   */
  removedAt: at("removed_at"),
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
  /**
   * The flow options computed by functions in code (`idempotencyKey`, `businessKey`), so that a
   * client triggering by name without that code can say its runs carry no such key; null = not
   * recorded (written by an older release).
   */
  keyFunctions: jsonb("key_functions").$type<string[]>(),
  /**
   * When `ax flow retire` took the flow out of use (its code is gone): it is no longer listed,
   * triggered or named in config, while its runs stay readable. A Runtime registering it clears it.
   */
  retiredAt: at("retired_at"),
  /** When a Runtime last registered the flow (or a config version it applies rewrote its settings). */
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
  (t) => [
    uniqueIndex("held_runs_run").on(t.runId),
    index("held_runs_flow_seq").on(t.flow, t.seq),
    // Admission reads a flow's own held runs and each backfill's apart, so a long backfill cannot hide the others.
    index("held_runs_flow_seq_own").on(t.flow, t.seq).where(sql`${t.backfillId} is null`),
    index("held_runs_backfill_seq").on(t.backfillId, t.seq),
  ],
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
