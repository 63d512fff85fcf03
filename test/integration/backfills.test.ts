import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AxBackfillCancelledError,
  AxBackfillRangeError,
  AxNoScheduleError,
  AxNoTicksError,
  AxTooManyTicksError,
  ax,
  type AxEvent,
  type Client,
  type RunSummary,
  type Runtime,
} from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { maxOverlap } from "../helpers/overlap.js";
import { AX_BIN, REPO_ROOT } from "../helpers/processes.js";
import { testRuntime } from "../helpers/runtime.js";

const work = ax.task({ name: "nightly_work" }, async () => {
  await sleep(150);
  return "ok";
});
const nightly = ax.flow({ name: "nightly", schedule: { cron: "0 2 * * *", timezone: "Europe/Paris" } }, () => {
  work();
});
const hourly = ax.flow({ name: "hourly", schedule: "0 * * * *" }, () => {
  work();
});
const unscheduled = ax.flow({ name: "unscheduled" }, () => {
  work();
});
const capped = ax.flow({ name: "capped_yearly", schedule: "0 0 1 1 *", maxConcurrentRuns: 3 }, () => {
  work();
});
const zoneless = ax.flow({ name: "zoneless", schedule: "30 2 * * *" }, () => {
  work();
});
const heldDaily = ax.flow({ name: "held_daily", schedule: "0 0 * * *" }, () => {
  work();
});
/** Fails while `failLoads` lasts: ticks of a backfill fail, and succeed when retried. */
let extractCalls = 0;
let loadCalls = 0;
let failLoads = 0;
const extract = ax.task({ name: "flaky_extract" }, async () => ++extractCalls);
const load = ax.task({ name: "flaky_load", retries: 0 }, async (n: number) => {
  loadCalls++;
  if (failLoads > 0) {
    failLoads--;
    throw new Error(`load ${n} failed`);
  }
  return n;
});
const flakyDaily = ax.flow({ name: "flaky_daily", schedule: "0 0 * * *" }, () => {
  load(extract());
});
const everySecond = ax.flow({ name: "every_second", schedule: "* * * * * *" }, () => {
  work();
});

describe("client.backfill(flow, { from, to })", { timeout: 120_000 }, () => {
  const env = isolate("backfill");
  let runtime: Runtime;
  let client: Client;
  const backfillRuns = async (flow: string) => (await client.listRuns({ flow, limit: 500 })).filter((r) => r.trigger === "backfill");

  async function waitUntilDone(id: string): Promise<void> {
    const deadline = Date.now() + 90_000;
    for (;;) {
      const info = await client.getBackfill(id);
      if (info.done === info.ticks) return;
      if (Date.now() > deadline) throw new Error(`backfill ${id} still at ${info.done}/${info.ticks}`);
      await sleep(100);
    }
  }

  beforeAll(async () => {
    runtime = testRuntime(env, { flows: [nightly, hourly, unscheduled, zoneless, everySecond, capped, heldDaily, flakyDaily] });
    await runtime.start();
    client = runtime.client();
  });

  afterAll(async () => {
    await client?.close();
    await runtime?.stop();
    await env.cleanup();
  });

  it("10 daily ticks, backfilled twice: 10 runs with their logical dates, never more than maxConcurrentRuns at once", async () => {
    const range = { from: "2026-03-20T00:00:00Z", to: "2026-03-30T00:00:00Z", maxConcurrentRuns: 3 };
    const first = await client.backfill("nightly", range);
    expect(first).toMatchObject({ ticks: 10, created: 10 });
    const again = await client.backfill("nightly", range);
    expect(again).toMatchObject({ ticks: 10, created: 0 });
    await waitUntilDone(first.backfillId);
    await waitUntilDone(again.backfillId);
    const runs = await backfillRuns("nightly");
    expect(runs).toHaveLength(10);
    expect(runs.every((r) => r.status === "success")).toBe(true);
    // 02:00 in Paris is 01:00Z in winter; on 2026-03-29 02:00 does not exist and the tick fires once, at 03:00 CEST (01:00Z).
    const dates = runs.map((r) => r.logicalDate).sort();
    expect(dates[0]).toBe("2026-03-20T01:00:00.000Z");
    expect(dates.at(-1)).toBe("2026-03-29T01:00:00.000Z");
    expect(new Set(dates.map((d) => d!.slice(0, 10))).size).toBe(10);
    expect(maxOverlap(runs.map((r: RunSummary) => ({ start: r.startedAt!, end: r.finishedAt! })))).toBeLessThanOrEqual(3);
    expect(await client.getBackfill(first.backfillId)).toMatchObject({ ticks: 10, done: 10, succeeded: 10, failed: 0, status: "finished" });
  });

  it("a schedule without a zone backfills in UTC, whatever the zone of the process that asks", async () => {
    const zone = process.env.TZ;
    const range = { from: "2026-01-01T00:00:00Z", to: "2026-01-03T00:00:00Z" };
    try {
      process.env.TZ = "Asia/Tokyo";
      const first = await client.backfill("zoneless", range);
      process.env.TZ = "America/New_York";
      const again = await client.backfill("zoneless", range);
      expect([first.created, again.created]).toEqual([2, 0]);
    } finally {
      if (zone === undefined) delete process.env.TZ;
      else process.env.TZ = zone;
    }
    const dates = (await backfillRuns("zoneless")).map((r) => r.logicalDate).sort();
    expect(dates).toEqual(["2026-01-01T02:30:00.000Z", "2026-01-02T02:30:00.000Z"]);
  });

  it("refuses a range over maxTicks after counting one tick past it, not the whole range", async () => {
    // 20 days of a schedule firing every second: 1,728,000 ticks, which would take seconds to list.
    const refused = await client
      .backfill("every_second", { from: "2026-01-01T00:00:00Z", to: "2026-01-21T00:00:00Z" })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(AxTooManyTicksError);
    expect(refused).toMatchObject({ ticks: 100_001, limit: 100_000, ceiling: false });
    expect((refused as Error).message).toContain("more than 100000 ticks");
    expect(await backfillRuns("every_second")).toHaveLength(0);
  });

  it("a backfill longer than admission's window, at its own cap, does not hold back the flow's other runs", async () => {
    // 1,100 yearly ticks, one at a time: more held runs than one admission pass reads (1,000).
    const long = await client.backfill("capped_yearly", { from: "0800-01-01T00:00:00Z", to: "1900-01-01T00:00:00Z", maxConcurrentRuns: 1 });
    expect(long.ticks).toBe(1100);
    const manual = await client.triggerFlow("capped_yearly", null);
    // The flow's cap is 3 and the backfill holds 1: the manual run has a slot.
    expect((await client.waitForRun(manual, { timeout: "10s" })).status).toBe("success");
    await client.cancelBackfill(long.backfillId);
  });

  it("says how many runs go at once: its own cap, or the flow's maxConcurrentRuns when smaller", async () => {
    const wide = await client.backfill("capped_yearly", {
      from: "1900-01-01T00:00:00Z",
      to: "1905-01-01T00:00:00Z",
      maxConcurrentRuns: 10,
    });
    expect(wide).toMatchObject({ ticks: 5, maxConcurrentRuns: 3 });
    expect((await client.getBackfill(wide.backfillId)).maxConcurrentRuns).toBe(10);
    const narrow = await client.backfill("capped_yearly", {
      from: "1905-01-01T00:00:00Z",
      to: "1907-01-01T00:00:00Z",
      maxConcurrentRuns: 2,
    });
    expect(narrow.maxConcurrentRuns).toBe(2);
    await Promise.all([client.cancelBackfill(wide.backfillId), client.cancelBackfill(narrow.backfillId)]);
  });

  it("retries a backfill's failed ticks: only their failed nodes run again, under its cap, and its progress follows them", async () => {
    failLoads = 3;
    const started = await client.backfill("flaky_daily", {
      from: "2026-04-01T00:00:00Z",
      to: "2026-04-07T00:00:00Z",
      maxConcurrentRuns: 2,
    });
    await waitUntilDone(started.backfillId);
    expect(await client.getBackfill(started.backfillId)).toMatchObject({ ticks: 6, succeeded: 3, failed: 3 });
    const failed = (await client.listRuns({ flow: "flaky_daily", status: "failed" })).map((r) => r.id).sort();

    expect(await client.retryBackfill(started.backfillId)).toEqual({ backfillId: started.backfillId, retried: 3, maxConcurrentRuns: 2 });
    await waitUntilDone(started.backfillId);
    expect(await client.getBackfill(started.backfillId)).toMatchObject({ ticks: 6, done: 6, succeeded: 6, failed: 0, status: "finished" });
    // extract's results were carried over; only load ran again, once per failed tick.
    expect([extractCalls, loadCalls]).toEqual([6, 9]);
    const reruns = await client.listRuns({ flow: "flaky_daily", trigger: "rerun" });
    expect(reruns.map((r) => r.rerunOf).sort()).toEqual(failed);
    for (const rerun of reruns) {
      const old = await client.getRun(rerun.rerunOf!);
      expect(rerun.logicalDate).toBe(old.logicalDate);
    }
    expect((await client.retryBackfill(started.backfillId)).retried).toBe(0);
  });

  it("a later backfill lists a date's newest run: a date rerun to success is not retried again, even once retention took its first run", async () => {
    // The range of the test above: three dates failed, then were rerun to success by its retry.
    const range = { from: "2026-04-01T00:00:00Z", to: "2026-04-07T00:00:00Z" };
    const inRange = "logical_date >= '2026-04-01T00:00:00Z' and logical_date < '2026-04-07T00:00:00Z'";
    const calls = loadCalls;
    const again = await client.backfill("flaky_daily", range);
    expect(again.created).toBe(0);
    expect(await client.getBackfill(again.backfillId)).toMatchObject({ ticks: 6, succeeded: 6, failed: 0, status: "finished" });
    expect((await client.retryBackfill(again.backfillId)).retried).toBe(0);

    // Retention takes the three failed first runs (and their idempotency keys) but not their reruns.
    await env.sql(
      `update runs set created_at = now() - interval '100 days', finished_at = now() - interval '100 days'
       where flow = 'flaky_daily' and status = 'failed' and ${inRange}`,
    );
    expect((await client.prune({ olderThan: "30d" })).runs).toBe(3);
    const third = await client.backfill("flaky_daily", range);
    expect(third.created).toBe(0);
    expect(await client.getBackfill(third.backfillId)).toMatchObject({ succeeded: 6, failed: 0, status: "finished" });
    expect(loadCalls).toBe(calls);

    // Retention taking one of a finished backfill's runs leaves it finished, the tick counted as pruned.
    await env.sql(
      `update runs set created_at = now() - interval '100 days', finished_at = now() - interval '100 days'
       where id = (select id from runs where flow = 'flaky_daily' and ${inRange} order by logical_date limit 1)`,
    );
    expect((await client.prune({ olderThan: "30d" })).runs).toBe(1);
    expect(await client.getBackfill(third.backfillId)).toMatchObject({
      ticks: 6,
      done: 6,
      succeeded: 5,
      pruned: 1,
      running: 0,
      waiting: 0,
      status: "finished",
    });
  });

  it("reruns each failed date once, whatever the number of retries at once and of backfills listing it", async () => {
    failLoads = 4;
    const range = { from: "2026-05-01T00:00:00Z", to: "2026-05-05T00:00:00Z" };
    const first = await client.backfill("flaky_daily", range);
    await waitUntilDone(first.backfillId);
    // The same range again lists the same (failed) runs.
    const second = await client.backfill("flaky_daily", range);
    expect(second.created).toBe(0);
    expect(await client.getBackfill(second.backfillId)).toMatchObject({ ticks: 4, failed: 4 });

    const answers = await Promise.all([
      client.retryBackfill(first.backfillId),
      client.retryBackfill(first.backfillId),
      client.retryBackfill(second.backfillId),
    ]);
    expect(answers.reduce((n, a) => n + a.retried, 0)).toBe(4);
    await waitUntilDone(first.backfillId);
    for (const id of [first.backfillId, second.backfillId]) {
      expect(await client.getBackfill(id)).toMatchObject({ ticks: 4, succeeded: 4, failed: 0 });
    }
    const reruns = (await client.listRuns({ flow: "flaky_daily", trigger: "rerun", limit: 500 })).filter(
      (r) => Date.parse(r.logicalDate!) >= Date.parse(range.from) && Date.parse(r.logicalDate!) < Date.parse(range.to),
    );
    expect(reruns).toHaveLength(4);
    expect(new Set(reruns.map((r) => r.logicalDate)).size).toBe(4);
  });

  it("cancelling counts the held runs it ends in cancelledRuns, with the started ones, and ends each as a cancel does", async () => {
    // One run admitted at a time: the other three are held when the cancel comes.
    const started = await client.backfill("held_daily", {
      from: "2026-01-01T00:00:00Z",
      to: "2026-01-05T00:00:00Z",
      maxConcurrentRuns: 1,
    });
    const cancelledEvents = new Set<string>();
    const unsubscribe = ax.onEvent((event: AxEvent) => {
      if (event.name === "run_cancelled") cancelledEvents.add(event.runId);
    });
    const { cancelledRuns } = await client.cancelBackfill(started.backfillId);
    const info = await client.getBackfill(started.backfillId);
    expect(cancelledRuns).toBe(info.cancelled);
    expect(cancelledRuns).toBeGreaterThanOrEqual(3);
    const cancelled = (await backfillRuns("held_daily")).filter((r) => r.status === "cancelled");
    expect(cancelled).toHaveLength(cancelledRuns);
    // Held runs too: listeners hear of each, and their nodes say why, as any cancelled run's do.
    const deadline = Date.now() + 10_000;
    while (cancelled.some((r) => !cancelledEvents.has(r.id)) && Date.now() < deadline) await sleep(50);
    unsubscribe();
    expect(cancelled.filter((r) => !cancelledEvents.has(r.id))).toEqual([]);
    for (const run of cancelled) {
      for (const task of (await client.getRun(run.id)).tasks) expect(task.error?.name, run.id).toBe("AxCancelledError");
    }
  });

  it("cancelling a backfill leaves what another active one lists (its held runs handed over); cancelling a finished one changes nothing", async () => {
    const range = { from: "2026-02-01T00:00:00Z", to: "2026-02-06T00:00:00Z", maxConcurrentRuns: 1 };
    const first = await client.backfill("held_daily", range);
    const second = await client.backfill("held_daily", range);
    expect([first.created, second.created]).toEqual([5, 0]);
    // The second only lists the first's runs: cancelling it ends none of them.
    expect(await client.cancelBackfill(second.backfillId)).toEqual({ backfillId: second.backfillId, cancelledRuns: 0 });
    const third = await client.backfill("held_daily", { ...range, from: "2026-03-01T00:00:00Z", to: "2026-03-06T00:00:00Z" });
    const fourth = await client.backfill("held_daily", { ...range, from: "2026-03-01T00:00:00Z", to: "2026-03-06T00:00:00Z" });
    // The fourth lists the third's runs, one running and four held: they go on under the fourth.
    expect(await client.cancelBackfill(third.backfillId)).toEqual({ backfillId: third.backfillId, cancelledRuns: 0 });
    await waitUntilDone(fourth.backfillId);
    expect(await client.getBackfill(fourth.backfillId)).toMatchObject({ status: "finished", succeeded: 5, cancelled: 0 });
    await waitUntilDone(first.backfillId);
    expect(await client.getBackfill(first.backfillId)).toMatchObject({ status: "finished", succeeded: 5, cancelled: 0 });
    // Nothing left to cancel: it stays finished, and a retry is still allowed.
    expect(await client.cancelBackfill(first.backfillId)).toEqual({ backfillId: first.backfillId, cancelledRuns: 0 });
    expect(await client.getBackfill(first.backfillId)).toMatchObject({ status: "finished" });
    expect(await client.retryBackfill(first.backfillId)).toMatchObject({ retried: 0 });
  });

  it("an overlapping range creates runs only for ticks without one", async () => {
    const first = await client.backfill("hourly", { from: "2026-01-01T00:00:00Z", to: "2026-01-01T04:00:00Z" });
    const overlapping = await client.backfill("hourly", { from: "2026-01-01T02:00:00Z", to: "2026-01-01T06:00:00Z" });
    expect([first.created, overlapping.created]).toEqual([4, 2]);
    await waitUntilDone(overlapping.backfillId);
    expect(await backfillRuns("hourly")).toHaveLength(6);
  });

  it("a logical date has one run whether the schedule or a backfill reached it first", async () => {
    // every_second has ticked since the Runtime started: the range holds ticks it ran and maybe
    // the one it is about to run. Ticks still to come are the schedule's alone: a range reaching
    // past now backfills up to now, and one starting later is refused.
    const now = Math.floor(Date.now() / 1000) * 1000;
    const from = new Date(now - 6000);
    const to = new Date(now);
    const started = await client.backfill("every_second", { from, to: new Date(now + 3_600_000) });
    expect(started.ticks).toBeGreaterThanOrEqual(6);
    expect(started.ticks).toBeLessThanOrEqual(8);
    await expect(
      client.backfill("every_second", { from: new Date(Date.now() + 60_000), to: new Date(Date.now() + 120_000) }),
    ).rejects.toThrow(/starts after now: ticks still to come are the schedule's/);
    await sleep(1500);
    await waitUntilDone(started.backfillId);
    const inRange = (await client.listRuns({ flow: "every_second", limit: 500 })).filter(
      (r) => r.logicalDate !== null && r.logicalDate >= from.toISOString() && r.logicalDate < to.toISOString(),
    );
    const perDate = new Map<string, string[]>();
    for (const r of inRange) perDate.set(r.logicalDate!, [...(perDate.get(r.logicalDate!) ?? []), r.trigger]);
    expect(perDate.size).toBe(6);
    expect([...perDate.values()].filter((triggers) => triggers.length !== 1)).toEqual([]);
    const ticks = await env.sql<{ run_id: string | null }>(
      "select run_id from schedule_ticks where flow = 'every_second' and logical_date >= $1 and logical_date < $2",
      [from.toISOString(), to.toISOString()],
    );
    for (const tick of ticks) if (tick.run_id) expect(inRange.map((r) => r.id)).toContain(tick.run_id);
    const info = await client.getBackfill(started.backfillId);
    expect(info).toMatchObject({ ticks: started.ticks, done: started.ticks });
    const future = await client.listRuns({ flow: "every_second", trigger: "backfill", from: new Date(0), limit: 500 });
    expect(future.filter((r) => r.logicalDate! > new Date(now + 2000).toISOString())).toEqual([]);
  });

  it("bad backfills are refused and nothing is created", async () => {
    // The every-second schedule keeps starting runs of its own meanwhile; only backfills count.
    const count = async () =>
      (
        await env.sql<{ n: number }>(
          "select (select count(*) from runs where trigger = 'backfill') + (select count(*) from backfills) + (select count(*) from backfill_runs) as n",
        )
      )[0]!.n;
    const before = await count();
    await expect(client.backfill("hourly", { from: "2026-01-02T00:00:00Z", to: "2026-01-01T00:00:00Z" })).rejects.toBeInstanceOf(
      AxBackfillRangeError,
    );
    await expect(client.backfill("hourly", { from: "2026-01-01T00:00:00Z", to: "2026-01-01T00:00:00Z" })).rejects.toBeInstanceOf(
      AxBackfillRangeError,
    );
    await expect(client.backfill("hourly", { from: "yesterday", to: "2026-01-01T00:00:00Z" })).rejects.toBeInstanceOf(AxBackfillRangeError);
    await expect(client.backfill("unscheduled", { from: "2026-01-01T00:00:00Z", to: "2026-01-02T00:00:00Z" })).rejects.toThrow(
      AxNoScheduleError,
    );
    await expect(client.backfill("hourly", { from: "2025-01-01T00:00:00Z", to: "2026-01-01T00:00:00Z", maxTicks: 100 })).rejects.toThrow(
      AxTooManyTicksError,
    );
    // Half an hour between two ticks of an hourly schedule: nothing would run, so no backfill is recorded.
    await expect(client.backfill("hourly", { from: "2026-01-01T00:10:00Z", to: "2026-01-01T00:40:00Z" })).rejects.toThrow(
      /^backfill of "hourly" has no tick from 2026-01-01T00:10:00.000Z to 2026-01-01T00:40:00.000Z: its cron "0 \* \* \* \*"/,
    );
    await expect(client.backfill("hourly", { from: "2026-01-01T00:10:00Z", to: "2026-01-01T00:40:00Z" })).rejects.toBeInstanceOf(
      AxNoTicksError,
    );
    expect(await count()).toBe(before);
  });

  it("ax backfill shows a progress bar to the end; ax backfills lists it; ax backfill cancel stops the rest", async () => {
    const connection = ["--storage", env.storage, "--prefix", env.prefix];
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [
        AX_BIN,
        "backfill",
        "hourly",
        "--from",
        "2026-02-01T00:00:00Z",
        "--to",
        "2026-02-01T08:00:00Z",
        "--max-concurrent",
        "2",
        ...connection,
      ],
      { cwd: REPO_ROOT, env: { ...process.env, NO_COLOR: "1" }, timeout: 90_000 },
    );
    expect(stdout).toMatch(/8 tick\(s\) of hourly, 8 new run\(s\), at most 2 at a time/);
    expect(stdout).toMatch(/backfill \[[^\]]*\] 8\/8 done \| 0 failed/);
    expect(stdout).toMatch(/finished: 8 succeeded, 0 failed/);
    const listed = await promisify(execFile)(process.execPath, [AX_BIN, "backfills", ...connection], { cwd: REPO_ROOT, timeout: 90_000 });
    expect(listed.stdout).toMatch(/hourly\s+finished\s+8\/8 done {2}0 failed {2}0 cancelled {2}0 running/);
    // Nothing left to cancel: said so, and it stays finished.
    const finished = (await client.listBackfills()).find((b) => b.flow === "hourly" && b.from === "2026-02-01T00:00:00.000Z")!;
    const noop = await promisify(execFile)(process.execPath, [AX_BIN, "backfill", "cancel", finished.id, ...connection], {
      cwd: REPO_ROOT,
      timeout: 90_000,
    });
    expect(noop.stdout).toBe(`backfill ${finished.id} is finished: nothing to cancel (its failed ticks can still be retried)\n`);
    expect((await client.getBackfill(finished.id)).status).toBe("finished");

    const big = await client.backfill("hourly", { from: "2026-03-01T00:00:00Z", to: "2026-03-03T00:00:00Z", maxConcurrentRuns: 1 });
    const cancelled = await promisify(execFile)(process.execPath, [AX_BIN, "backfill", "cancel", big.backfillId, ...connection], {
      cwd: REPO_ROOT,
      timeout: 90_000,
    });
    expect(cancelled.stdout).toMatch(/^backfill \S+ cancelled: \d+ run\(s\) cancelled/);
    const again = await promisify(execFile)(process.execPath, [AX_BIN, "backfill", "cancel", big.backfillId, ...connection], {
      cwd: REPO_ROOT,
      timeout: 90_000,
    });
    expect(again.stdout).toBe(`backfill ${big.backfillId} was already cancelled: nothing to do\n`);
    const info = await client.getBackfill(big.backfillId);
    expect(info.status).toBe("cancelled");
    // Runs released before the cancel may have finished; none is left waiting or running.
    expect(info.cancelled).toBeGreaterThan(0);
    expect(info).toMatchObject({ done: 48, running: 0, waiting: 0, failed: 0 });
    expect(info.succeeded + info.cancelled).toBe(48);
    const retry = await promisify(execFile)(process.execPath, [AX_BIN, "backfill", "retry", big.backfillId, ...connection], {
      cwd: REPO_ROOT,
      timeout: 90_000,
    }).catch((e: { code: number; stderr: string }) => e);
    expect(retry).toMatchObject({ code: 1, stderr: expect.stringMatching(/^AxBackfillCancelledError: backfill \S+ was cancelled/) });
    await expect(client.retryBackfill(big.backfillId)).rejects.toBeInstanceOf(AxBackfillCancelledError);
  });
});
