import { bigserial, boolean, index, integer, jsonb, pgTable, primaryKey, text, uuid } from "drizzle-orm/pg-core";
import type { Json } from "../types.js";
import { at } from "./columns.js";

/**
 * One row per alert key (alert group, kind, flow, task, error fingerprint): when it was last sent,
 * and how many were held back since. Claiming a send is one upsert, so N coordinators send one
 * alert per key per silence window; each group that an alert goes to keeps its own window.
 */
export const alertDedupe = pgTable(
  "alert_dedupe",
  {
    alertGroup: text("alert_group").notNull(),
    kind: text("kind").notNull(),
    flow: text("flow").notNull(),
    task: text("task").notNull(),
    fingerprint: text("fingerprint").notNull(),
    lastSentAt: at("last_sent_at").notNull(),
    /** Alerts of this key held back since the last one sent. */
    suppressed: integer("suppressed").notNull().default(0),
    /** The claim that sent last: a claimant knows it won when it reads its own token back. */
    claim: uuid("claim").notNull(),
    /**
     * For a condition that scans find again (runs stuck `running`): when the newest occurrence
     * already counted began. Found again, by this coordinator or another, it is no new alert held back.
     */
    countedSince: at("counted_since"),
  },
  (t) => [primaryKey({ columns: [t.alertGroup, t.kind, t.flow, t.task, t.fingerprint] })],
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

/**
 * Every alert a coordinator sent (or tried to), with what each sink answered: the console's and
 * `GET /api/alerts`' history. Pruned with the runs, by `retention`.
 */
export const alertLog = pgTable(
  "alert_log",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    sentAt: at("sent_at").defaultNow().notNull(),
    /** The alert as its sinks received it: its group, kind, flow and run are read from here. */
    alert: jsonb("alert").$type<Json>().notNull(),
    /** One `{ sink, target, ok, error? }` per sink. */
    deliveries: jsonb("deliveries").$type<Json>().notNull(),
  },
  (t) => [index("alert_log_sent_at").on(t.sentAt)],
);

/**
 * An operator's mute: the alerts of one group (narrowed to a flow, and to a task of it, when
 * given) are not sent until `until`. Unlike a silence window it is set by hand, for a known
 * incident or a maintenance, and ends early when deleted.
 */
export const alertMutes = pgTable(
  "alert_mutes",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    alertGroup: text("alert_group").notNull(),
    /** Null: every flow of the group. */
    flow: text("flow"),
    /** Null: every task (and the run-level alerts) of the flow. */
    task: text("task"),
    until: at("until").notNull(),
    createdAt: at("created_at").defaultNow().notNull(),
    createdBy: text("created_by").notNull(),
    reason: text("reason"),
  },
  (t) => [index("alert_mutes_group_until").on(t.alertGroup, t.until)],
);
