import { integer, jsonb, pgTable, primaryKey, serial, text } from "drizzle-orm/pg-core";
import type { Json } from "../types.js";
import { at } from "./columns.js";

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
  /** Attempts it runs at once (`maxConcurrency`); null for a worker older than 0.9. */
  concurrency: integer("concurrency"),
  /** Its Redis key prefix: a worker on another prefix than a queue's jobs never takes them. Null for a worker older than 0.19. */
  prefix: text("prefix"),
});

/**
 * Every running Runtime, whatever its roles, and the config version it applies, for `ax config
 * show --cluster`: a coordinator or an API process has no `workers` row. A worker process's row
 * here shares its id with its `workers` row.
 */
export const processes = pgTable("processes", {
  id: text("id").primaryKey(),
  hostname: text("hostname").notNull(),
  pid: integer("pid").notNull(),
  roles: text("roles").array().notNull(),
  configVersion: integer("config_version"),
  /**
   * The flows its code defines (a Runtime registers them at start): a flow a live process defines
   * cannot be retired. Empty for `ax server` without an entry; null for a process older than 0.21.
   */
  flows: text("flows").array(),
  startedAt: at("started_at").defaultNow().notNull(),
  heartbeatAt: at("heartbeat_at").defaultNow().notNull(),
});

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
