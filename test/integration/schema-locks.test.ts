import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { migrate, nodesToRequeue, openStore, type Store } from "@ax/store";
import { isolate } from "../helpers/isolated.js";

/**
 * Advisory locks belong to the whole database. Two installations in different schemas of one
 * database (`?schema=`, as every test here runs) must not hold each other up: a reconciler that
 * finds its lock taken skips the pass.
 */
describe("the locks of two installations in one database", () => {
  const here = isolate("locks_a");
  const there = isolate("locks_b");
  let ours: Store;
  let theirs: Store;

  beforeAll(async () => {
    ours = openStore({ url: here.storage });
    theirs = openStore({ url: there.storage });
    await migrate(ours);
    await migrate(theirs);
  });

  afterAll(async () => {
    await ours?.close();
    await theirs?.close();
    await here.cleanup();
    await there.cleanup();
  });

  it("let one migrate while the other's migration holds its lock, and serialise two on one schema", async () => {
    const third = isolate("locks_c");
    const fresh = openStore({ url: third.storage });
    try {
      // What a migration of the other installation holds while it runs (the key migrate.ts takes).
      await theirs.withSession(async (db) => {
        await db.execute(sql`select pg_advisory_lock(7314001, hashtext(${there.schema}))`);
        try {
          await migrate(fresh);
          expect(await third.sql("select count(*)::int as n from runs")).toEqual([{ n: 0 }]);
          // The same schema's migration waits for the lock.
          let done = false;
          const again = migrate(theirs).then(() => {
            done = true;
          });
          await new Promise((resolve) => setTimeout(resolve, 300));
          expect(done).toBe(false);
          await db.execute(sql`select pg_advisory_unlock(7314001, hashtext(${there.schema}))`);
          await again;
        } finally {
          await db.execute(sql`select pg_advisory_unlock_all()`);
        }
      });
    } finally {
      await fresh.close();
      await third.cleanup();
    }
  });

  it("let one reconcile while the other holds its own reconciler's lock", async () => {
    const window = { staleMs: 0, leaseMs: 5000, limit: 10 };
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let taken!: () => void;
    const lockTaken = new Promise<void>((resolve) => {
      taken = resolve;
    });
    // The other installation's pass, stopped while it holds its lock.
    const otherPass = theirs.db.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(hashtext(current_schema() || ':ax.reconcile'))`);
      taken();
      await held;
    });
    await lockTaken;
    try {
      // Undefined would mean "another coordinator is reading a page": the lock was taken.
      expect(await nodesToRequeue(ours.db, window)).toEqual({ nodes: [], next: undefined });
      expect(await nodesToRequeue(theirs.db, window)).toBeUndefined();
    } finally {
      release();
      await otherPass;
    }
  });
});
