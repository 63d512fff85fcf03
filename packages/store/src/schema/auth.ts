import { bigserial, index, jsonb, pgTable, text } from "drizzle-orm/pg-core";
import type { Json } from "../types.js";
import { at } from "./columns.js";

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
