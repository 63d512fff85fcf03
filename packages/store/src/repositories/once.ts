import { sql } from "drizzle-orm";
import type { Db } from "../connect.js";
import type { Json } from "../types.js";
import { jsonParam, rows } from "./raw.js";

/**
 * What a claim attempt on an `ax.once` key found: the claim is now ours, the key is done (its
 * stored result), another live call holds it, or the row vanished between the two statements
 * (its holder released it) and the caller should simply try again.
 */
export type OnceClaimState =
  | { state: "claimed" }
  | { state: "done"; result: Json }
  | { state: "held"; claimedBy: string }
  | { state: "free" };

const leaseInterval = (leaseMs: number) => sql`${`${Math.ceil(leaseMs)} milliseconds`}::interval`;

/**
 * Claims `key` for `claimant` until `leaseMs` from now (PostgreSQL's clock): inserts the claim,
 * or takes over a claim whose lease lapsed (its holder died or stopped renewing). Each statement
 * commits on its own, so no transaction or connection is held between calls.
 */
export async function claimOnceKey(
  db: Db,
  key: string,
  claimant: string,
  leaseMs: number,
  /** The claiming attempt's run, kept with the key for retention. */
  runId: string | null = null,
): Promise<OnceClaimState> {
  const claimed = await rows<{ key: string }>(
    db,
    sql`insert into once_keys (key, claimed_by, lease_until, run_id) values (${key}, ${claimant}, now() + ${leaseInterval(leaseMs)}, ${runId})
        on conflict (key) do update set claimed_by = excluded.claimed_by, lease_until = excluded.lease_until, run_id = excluded.run_id
        where once_keys.claimed_by is not null and once_keys.lease_until < now()
        returning key`,
  );
  if (claimed.length > 0) return { state: "claimed" };
  const [row] = await rows<{ result: Json | null; claimed_by: string | null }>(
    db,
    sql`select result, claimed_by from once_keys where key = ${key}`,
  );
  if (!row) return { state: "free" };
  return row.claimed_by === null ? { state: "done", result: row.result } : { state: "held", claimedBy: row.claimed_by };
}

/** Extends the claimant's lease; false when the claim is no longer its own (lapsed and taken over). */
export async function renewOnceClaim(db: Db, key: string, claimant: string, leaseMs: number): Promise<boolean> {
  const renewed = await rows<{ key: string }>(
    db,
    sql`update once_keys set lease_until = now() + ${leaseInterval(leaseMs)}
        where key = ${key} and claimed_by = ${claimant} returning key`,
  );
  return renewed.length > 0;
}

/**
 * Stores the result and ends the claim, fenced by the claimant: returns the stored value (as
 * later callers will read it), or undefined when the claim was lost and nothing was written.
 */
export async function completeOnceClaim(db: Db, key: string, claimant: string, result: Json): Promise<Json | undefined> {
  const [stored] = await rows<{ result: Json }>(
    db,
    sql`update once_keys set result = ${jsonParam(result)}::jsonb, claimed_by = null, lease_until = null, completed_at = now()
        where key = ${key} and claimed_by = ${claimant} returning result`,
  );
  return stored ? stored.result : undefined;
}

/** Gives the claim up so the next caller runs `fn` again; a no-op if the claim is no longer its own. */
export async function releaseOnceClaim(db: Db, key: string, claimant: string): Promise<void> {
  await db.execute(sql`delete from once_keys where key = ${key} and claimed_by = ${claimant}`);
}
