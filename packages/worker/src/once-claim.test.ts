import { randomUUID } from "node:crypto";
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claimOnceKey, migrate, openStore, type Store } from "@ax/store";
import { OnceHost } from "./executors/once-host.js";
import { claimOnce, OnceLease } from "./once-claim.js";
import { AxOnceClaimLostError } from "@ax/common";

const PG_URL = process.env.AX_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const LEASE_MS = 600;

/** The lease mechanics on a real PostgreSQL, with a lease short enough to watch it lapse. */
describe("ax.once claims", () => {
  const schema = `ax_once_claim_${randomBytes(4).toString("hex")}`;
  let store: Store;

  const holder = async (key: string) =>
    (
      (await store.db.execute(`select claimed_by from once_keys where key = '${key}'`)) as unknown as {
        rows: { claimed_by: string | null }[];
      }
    ).rows[0]?.claimed_by;

  beforeAll(async () => {
    store = openStore({ url: `${PG_URL}?schema=${schema}`, poolSize: 4 });
    await migrate(store);
  });

  afterAll(async () => {
    await store?.db.execute(`drop schema if exists "${schema}" cascade`);
    await store?.close();
  });

  it("renews the lease while fn runs, so nobody takes a live claim over", async () => {
    const lease = await claimOnce(store.db, "renewed", "a", { leaseMs: LEASE_MS });
    expect(lease).toBeInstanceOf(OnceLease);
    await sleep(LEASE_MS * 3);
    expect(await claimOnceKey(store.db, "renewed", "b", LEASE_MS)).toEqual({ state: "held", claimedBy: "a" });
    expect(await (lease as OnceLease).complete({ ok: true })).toEqual({ ok: true });
    expect(await claimOnceKey(store.db, "renewed", "b", LEASE_MS)).toEqual({ state: "done", result: { ok: true } });
  });

  it("stops renewing when the attempt ends: the lease lapses, another takes over, the late result is refused", async () => {
    const ended = new AbortController();
    const lease = (await claimOnce(store.db, "abandoned", "a", { leaseMs: LEASE_MS, signal: ended.signal })) as OnceLease;
    ended.abort(new Error("attempt timed out"));
    const takeover = await claimOnce(store.db, "abandoned", "b", { leaseMs: LEASE_MS });
    expect(takeover).toBeInstanceOf(OnceLease);
    expect(await holder("abandoned")).toBe("b");
    await expect(lease.complete("late")).rejects.toBeInstanceOf(AxOnceClaimLostError);
    expect(await (takeover as OnceLease).complete("b's")).toBe("b's");
  });

  it("stops waiting for a held key when the waiter's attempt ends", async () => {
    const lease = (await claimOnce(store.db, "waited", "a", { leaseMs: 30_000 })) as OnceLease;
    const ended = new AbortController();
    setTimeout(() => ended.abort(new Error("attempt cancelled")), 300);
    await expect(claimOnce(store.db, "waited", "b", { signal: ended.signal })).rejects.toThrow("attempt cancelled");
    await lease.release();
    expect(await holder("waited")).toBeUndefined();
  });

  it("releases what a thread or process child still holds when its attempt ends", async () => {
    const runId = randomUUID();
    const identity = {
      runId,
      flow: "f",
      task: "t",
      nodeKey: "n",
      attempt: 1,
      idempotencyKey: `${runId}:n`,
      businessKey: null,
      logicalDate: null,
    };
    const host = new OnceHost({ db: store.db, workerId: "w" }, identity);
    expect(await host.answer({ op: "claim", key: "child" })).toEqual({ outcome: "claimed", claim: 1 });
    expect(await holder("child")).toMatch(new RegExp(`^${runId}/n/1@w#`));
    await host.close();
    expect(await holder("child")).toBeUndefined();
    expect(await host.answer({ op: "complete", claim: 1, result: 1 })).toMatchObject({ outcome: "error" });
  });
});
