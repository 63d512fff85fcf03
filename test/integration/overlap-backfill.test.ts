import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, type Client, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

/** Shorter than the 2 s between ticks: the schedule's own runs never overlap each other. */
const work = ax.task({ name: "overlap_backfill_work" }, async () => {
  await sleep(1200);
  return ax.context().logicalDate;
});
const cancelling = ax.flow({ name: "overlap_backfill_cancel", schedule: "*/2 * * * * *", overlap: "cancel_previous" }, () => work());
const skipping = ax.flow({ name: "overlap_backfill_skip", schedule: "*/2 * * * * *", overlap: "skip" }, () => work());

describe("a schedule's ticks and a backfill of the same flow", { timeout: 90_000 }, () => {
  const env = isolate("overlapbf");
  let runtime: Runtime;
  let client: Client;

  beforeAll(async () => {
    runtime = testRuntime(env, { flows: [cancelling, skipping], maxConcurrency: 20 });
    await runtime.start();
    client = runtime.client();
  });

  afterAll(async () => {
    await runtime?.stop({ timeout: 1 });
    await env.cleanup();
  });

  it("ticks neither cancel a backfill's runs (cancel_previous) nor wait for them (skip)", async () => {
    const to = new Date(Math.floor(Date.now() / 2000) * 2000 - 10_000);
    const from = new Date(to.getTime() - 40_000);
    const started = new Date();
    const backfills = await Promise.all(
      [cancelling.name, skipping.name].map((flow) =>
        client.backfill(flow, { from: from.toISOString(), to: to.toISOString(), maxConcurrentRuns: 2 }),
      ),
    );
    expect(backfills.map((b) => b.ticks)).toEqual([20, 20]);
    // Three ticks or so while both backfills still have most of their 20 runs of 1.2 s to go, two at a time.
    await sleep(6500);
    const cancelled = await env.sql<{ flow: string; n: number }>(
      "select flow, count(*)::int as n from runs where trigger = 'backfill' and status = 'cancelled' group by flow",
    );
    expect(cancelled).toEqual([]);
    const ticks = await env.sql<{ flow: string; status: string; reason: string | null }>(
      "select flow, status, reason from schedule_ticks where logical_date > $1 order by logical_date",
      [started],
    );
    for (const flow of [cancelling.name, skipping.name]) {
      const mine = ticks.filter((t) => t.flow === flow);
      expect(mine.length, flow).toBeGreaterThanOrEqual(2);
      expect(mine.filter((t) => t.status === "created").length, flow).toBeGreaterThanOrEqual(2);
      // A tick may skip for the schedule's own run, slowed past 2 s on a loaded machine, never for a backfill's.
      const blocking = mine.flatMap((t) => (t.status === "created" ? [] : [/run ([0-9a-f-]{36})/.exec(t.reason ?? "")?.[1] ?? t.reason]));
      const triggers = await env.sql<{ trigger: string }>("select trigger from runs where id::text = any($1)", [blocking]);
      expect(triggers.length, `${flow}: ${blocking.join(", ")}`).toBe(blocking.length);
      expect(
        triggers.map((r) => r.trigger),
        flow,
      ).not.toContain("backfill");
    }
    const progress = await Promise.all(backfills.map((b) => client.getBackfill(b.backfillId)));
    for (const p of progress) expect(p.cancelled).toBe(0);
    for (const b of backfills) await client.cancelBackfill(b.backfillId);
  });
});
