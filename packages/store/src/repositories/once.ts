import { sql } from "drizzle-orm";
import type { Db } from "../connect.js";
import { assertJson } from "../json.js";
import type { Json } from "../types.js";
import { jsonParam, rows } from "./raw.js";

export interface OnceOutcome {
  result: Json;
  /** True when `fn` ran in this call; false when a stored result was returned. */
  ran: boolean;
}

/**
 * Runs `fn` at most once per key with a committed result: the claim (the `once_keys` row) and
 * the result are written in one transaction that stays open while `fn` runs.
 *
 * - A concurrent caller's insert of the same key waits on the uncommitted row, then finds the
 *   committed result and returns it without running `fn`.
 * - If `fn` throws or the process dies, the transaction rolls back and leaves no claim behind, so
 *   the next caller (a retry, another worker) runs `fn` again. Nothing can be stuck "claimed but
 *   without result".
 *
 * The price: an effect `fn` had outside this transaction before the rollback is not undone, so
 * `fn` should itself be idempotent (pass the key on to the API it calls) or write only to this
 * database; and one connection is held for as long as `fn` runs.
 */
export async function runOnce(db: Db, key: string, fn: () => unknown): Promise<OnceOutcome> {
  return db.transaction(async (tx) => {
    const claimed = await rows<{ key: string }>(
      tx,
      sql`insert into once_keys (key) values (${key}) on conflict (key) do nothing returning key`,
    );
    if (claimed.length === 0) {
      const [stored] = await rows<{ result: Json | null }>(tx, sql`select result from once_keys where key = ${key}`);
      return { result: stored?.result ?? null, ran: false };
    }
    const value = await fn();
    const result = value === undefined ? null : value;
    assertJson(result, `result of ax.once("${key}")`);
    await tx.execute(sql`update once_keys set result = ${jsonParam(result)}::jsonb where key = ${key}`);
    // Hand back what later callers will read, so the first call sees the same value they do.
    return { result: JSON.parse(jsonParam(result)) as Json, ran: true };
  });
}
