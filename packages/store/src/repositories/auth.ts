import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { and, desc, eq, isNull, like, lt, or, sql } from "drizzle-orm";
import { AxTokenNameError, TOKEN_SCOPES, type TokenScope } from "@ax/common";
import type { Db } from "../connect.js";
import { pgErrorCode } from "../pg-error.js";
import { apiTokens, auditLog } from "../schema/index.js";
import type { Json } from "../types.js";

export { TOKEN_SCOPES, type TokenScope } from "@ax/common";

export function scopeCovers(has: TokenScope, needs: TokenScope): boolean {
  return TOKEN_SCOPES.indexOf(has) >= TOKEN_SCOPES.indexOf(needs);
}

export interface ApiTokenInfo {
  name: string;
  scope: TokenScope;
  createdAt: Date;
  expiresAt: Date | null;
  lastUsedAt: Date | null;
}

export interface CreatedApiToken extends ApiTokenInfo {
  /** The bearer token; shown once, only its hash is stored. */
  token: string;
}

/** Who did something and from where, for the audit log. */
export interface Actor {
  name: string;
  ip?: string | undefined;
}

/** `ax_<id>_<secret>`: the id finds the row, the 256-bit secret is what the hash protects. */
const TOKEN_FORMAT = /^ax_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;

/** Writing `last_used_at` on every request would turn each read into a write: once a minute is enough to tell "in use". */
const LAST_USED_RESOLUTION_MS = 60_000;

const sha256 = (text: string) => createHash("sha256").update(text).digest();

export async function createApiToken(
  db: Db,
  token: { name: string; scope: TokenScope; expiresAt?: Date | undefined },
  actor: Actor,
): Promise<CreatedApiToken> {
  const id = randomBytes(8).toString("hex");
  const secret = randomBytes(32).toString("base64url");
  try {
    return await db.transaction(async (tx) => {
      const [row] = await tx
        .insert(apiTokens)
        .values({ id, name: token.name, scope: token.scope, hash: sha256(secret).toString("hex"), expiresAt: token.expiresAt ?? null })
        .returning();
      await tx.insert(auditLog).values({
        actor: actor.name,
        action: "token.create",
        target: token.name,
        ip: actor.ip ?? null,
        detail: { scope: token.scope, expiresAt: token.expiresAt?.toISOString() ?? null },
      });
      return { ...info(row!), token: `ax_${id}_${secret}` };
    });
  } catch (error) {
    if (pgErrorCode(error) === "23505") {
      throw new AxTokenNameError(
        `a token named "${token.name}" exists already: revoke it with \`ax token revoke ${token.name}\` or choose another name`,
      );
    }
    throw error;
  }
}

export async function listApiTokens(db: Db): Promise<ApiTokenInfo[]> {
  return (await db.select().from(apiTokens).orderBy(apiTokens.name)).map(info);
}

export async function countApiTokens(db: Db): Promise<number> {
  const [row] = await db.select({ n: sql<number>`count(*)::int` }).from(apiTokens);
  return Number(row?.n ?? 0);
}

/** Deletes the token (it stops working at once on every server) and records who did it. */
export async function revokeApiToken(db: Db, name: string, actor: Actor): Promise<void> {
  await db.transaction(async (tx) => {
    const deleted = await tx.delete(apiTokens).where(eq(apiTokens.name, name)).returning({ name: apiTokens.name });
    if (deleted.length === 0) throw new AxTokenNameError(`no token is named "${name}"; list them with \`ax token list\``);
    await tx.insert(auditLog).values({ actor: actor.name, action: "token.revoke", target: name, ip: actor.ip ?? null });
  });
}

/** The token's name and scope when `bearer` is a stored, unexpired token; undefined otherwise. */
export async function verifyApiToken(
  db: Db,
  bearer: string,
): Promise<{ name: string; scope: TokenScope; expiresAt: Date | null } | undefined> {
  const parts = TOKEN_FORMAT.exec(bearer);
  if (!parts) return undefined;
  const [, id, secret] = parts as unknown as [string, string, string];
  const [row] = await db.select().from(apiTokens).where(eq(apiTokens.id, id));
  if (!row || !timingSafeEqual(Buffer.from(row.hash, "hex"), sha256(secret))) return undefined;
  if (row.expiresAt && row.expiresAt.getTime() <= Date.now()) return undefined;
  if (!row.lastUsedAt || Date.now() - row.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
    await db
      .update(apiTokens)
      .set({ lastUsedAt: new Date() })
      .where(
        and(
          eq(apiTokens.id, id),
          or(isNull(apiTokens.lastUsedAt), lt(apiTokens.lastUsedAt, new Date(Date.now() - LAST_USED_RESOLUTION_MS))),
        ),
      );
  }
  return { name: row.name, scope: row.scope, expiresAt: row.expiresAt };
}

export interface AuditEntry {
  id: number;
  at: Date;
  actor: string;
  action: string;
  target: string | null;
  ip: string | null;
  detail: Json | null;
}

export async function writeAudit(
  db: Db,
  entry: { actor: Actor; action: string; target?: string | undefined; detail?: Json | undefined },
): Promise<void> {
  await db.insert(auditLog).values({
    actor: entry.actor.name,
    action: entry.action,
    target: entry.target ?? null,
    ip: entry.actor.ip ?? null,
    detail: entry.detail ?? null,
  });
}

export interface AuditFilter {
  limit?: number | undefined;
  /** Entries older than this id (the last id of the previous page). */
  before?: number | undefined;
  /** One action (`run.cancel`), or a family of them without the dot (`run`: trigger, cancel, rerun). */
  action?: string | undefined;
  /** One actor: a token's name, `cli:<user>`, `anonymous`. */
  actor?: string | undefined;
}

/** Newest first. */
export async function listAudit(db: Db, filter: AuditFilter = {}): Promise<AuditEntry[]> {
  const { action, actor, before } = filter;
  const family = action !== undefined && !action.includes(".");
  return db
    .select()
    .from(auditLog)
    .where(
      and(
        before === undefined ? undefined : lt(auditLog.id, before),
        action === undefined ? undefined : family ? like(auditLog.action, `${escapeLike(action)}.%`) : eq(auditLog.action, action),
        actor === undefined ? undefined : eq(auditLog.actor, actor),
      ),
    )
    .orderBy(desc(auditLog.id))
    .limit(filter.limit ?? 100);
}

/** `%` and `_` in a family name match themselves, not any text. */
const escapeLike = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

function info(row: typeof apiTokens.$inferSelect): ApiTokenInfo {
  return { name: row.name, scope: row.scope, createdAt: row.createdAt, expiresAt: row.expiresAt, lastUsedAt: row.lastUsedAt };
}
