import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AxStoreError } from "@ax/common";
import { openStore, type Store } from "@ax/store";
import { startPrivatePostgres, type PrivatePostgres } from "../helpers/private-postgres.js";

/**
 * A server that stops answering without closing its connections (a hung host, a network that drops
 * packets): statements on warm pool connections fail as unreachable once the statement bound and
 * its margin pass, instead of waiting for the server to come back; the pool works again after.
 */
describe("a frozen PostgreSQL", () => {
  let server: PrivatePostgres;
  let store: Store;
  const BOUND_MS = 1000;

  beforeAll(async () => {
    server = await startPrivatePostgres();
    store = openStore({ url: server.url, poolSize: 4, statementTimeoutMs: BOUND_MS });
    // Warm every connection of the pool, so no statement below waits on a new connection's bound.
    await Promise.all([1, 2, 3, 4].map(() => store.db.execute(sql`select pg_sleep(0.05)`)));
  }, 90_000);

  afterAll(async () => {
    await server?.thaw();
    await store?.close(1000);
    await server?.destroy();
  });

  it("fails statements and transactions as unreachable within the bound, and recovers on thaw", { timeout: 60_000 }, async () => {
    await server.freeze();
    const started = Date.now();
    const outcomes = await Promise.allSettled([
      store.db.execute(sql`select 1`),
      store.db.execute(sql`select 2`),
      store.db.transaction(async (tx) => tx.execute(sql`select 3`)),
    ]);
    const waited = Date.now() - started;
    expect(waited).toBeLessThan(BOUND_MS * 2 + 5000);
    for (const outcome of outcomes) {
      expect(outcome.status).toBe("rejected");
      const error = (outcome as PromiseRejectedResult).reason as AxStoreError;
      expect(error).toBeInstanceOf(AxStoreError);
      expect(error.unreachable).toBe(true);
      expect(error.message).toMatch(/^PostgreSQL did not answer a statement in time/);
    }

    await server.thaw();
    let back = false;
    for (let i = 0; i < 100 && !back; i++) {
      back = await store.db.execute(sql`select 1`).then(
        () => true,
        () => false,
      );
      if (!back) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(back).toBe(true);
    const rows = await Promise.all([1, 2, 3, 4, 5, 6, 7, 8].map((n) => store.db.execute(sql`select ${n}::int as n`)));
    expect(rows.map((r) => (r as { rows: { n: number }[] }).rows[0]?.n)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    // A statement that is merely slow gets PostgreSQL's own cancel, not the client's bound.
    const slow = await store.db.execute(sql`select pg_sleep(${(BOUND_MS * 1.5) / 1000})`).catch((error: unknown) => error);
    expect(slow).toBeInstanceOf(AxStoreError);
    expect((slow as AxStoreError).code).toBe("57014");
    expect((slow as AxStoreError).unreachable).toBe(false);
  });
});
