import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, describe, expect, it } from "vitest";
import { ax, type Runtime } from "ax-scheduler";
import pino from "pino";
import { captured } from "../helpers/log-capture.js";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";
import { steps, ticksOf, type TickRow } from "../helpers/schedule-ticks.js";
import { until } from "../helpers/until.js";

const note = ax.task({ name: "catch_up_note" }, () => ax.context().logicalDate);
const latestFlow = ax.flow({ name: "catch_latest", schedule: "* * * * * *", catchUp: "latest", overlap: "allow" }, () => note());
const allFlow = ax.flow({ name: "catch_all", schedule: "* * * * * *", catchUp: "all", overlap: "allow" }, () => note());
const noneFlow = ax.flow({ name: "catch_none", schedule: "* * * * * *", overlap: "allow" }, () => note());
// overlap "allow": caught-up ticks come at once and must not skip each other (the default "skip" would).
const flows = [latestFlow, allFlow, noneFlow];

describe("catch-up after the coordinator was down for 3 ticks", () => {
  const env = isolate("catchup");
  let runtime: Runtime | undefined;

  afterAll(async () => {
    await runtime?.stop();
    await env.cleanup();
  });

  it("none runs no missed tick, latest runs the newest, all runs every one", async () => {
    runtime = testRuntime(env, { flows });
    await runtime.start();
    await until(
      "two ticks of every flow",
      async () => (await Promise.all(flows.map((f) => ticksOf(env, f.name)))).every((t) => t.length >= 2),
      {
        timeoutMs: 20_000,
      },
    );
    await runtime.stop();
    runtime = undefined;
    const before = new Map<string, TickRow[]>();
    for (const f of flows) before.set(f.name, await ticksOf(env, f.name));
    const lastBefore = Math.max(...[...before.values()].map((t) => t.at(-1)!.at));
    // Down for 3 ticks after the last one recorded: waiting for the wall clock is the point here.
    await sleep(Math.max(0, lastBefore + 3300 - Date.now()));

    const restartedAt = Date.now();
    runtime = testRuntime(env, { flows });
    await runtime.start();
    const startedAt = Date.now();
    await until(
      "every flow to tick again after the restart",
      async () => (await Promise.all(flows.map((f) => ticksOf(env, f.name)))).every((t) => t.at(-1)!.at > restartedAt + 1000),
      { timeoutMs: 20_000 },
    );
    await runtime.stop();
    runtime = undefined;

    const missedBy = (name: string, ticks: TickRow[]) => {
      const last = before.get(name)!.at(-1)!.at;
      return ticks.filter((t) => t.at > last && t.at <= restartedAt).map((t) => t.at);
    };
    const all = await ticksOf(env, "catch_all");
    expect(missedBy("catch_all", all).length).toBeGreaterThanOrEqual(3);
    expect(steps(all).every((s) => s === 1)).toBe(true);

    const latest = await ticksOf(env, "catch_latest");
    // One gap, closed by the newest tick due when the coordinator caught up: the second of the
    // restart, or a later one when a loaded machine took that long to start it.
    expect(steps(latest).filter((s) => s !== 1)).toHaveLength(1);
    const resumed = latest.find((t, i) => i > 0 && t.at - latest[i - 1]!.at !== 1000)!;
    expect(resumed.at).toBeGreaterThanOrEqual(Math.floor(restartedAt / 1000) * 1000);
    expect(resumed.at).toBeLessThanOrEqual(startedAt);

    const none = await ticksOf(env, "catch_none");
    expect(missedBy("catch_none", none)).toEqual([]);

    for (const tick of [...all, ...latest, ...none]) {
      expect(tick).toMatchObject({ status: "created", run_trigger: "schedule", run_logical: tick.at });
    }
  }, 60_000);
});

describe("a coordinator starting after a gap longer than a few seconds", () => {
  const env = isolate("catchup_log");
  const gapFlow = ax.flow({ name: "catch_gap", schedule: "* * * * * *" }, () => note());

  it("says how many ticks it skipped and how many it ran, as the flow's catchUp says", async () => {
    const first = testRuntime(env, { flows: [gapFlow] });
    await first.start();
    await until("two ticks of catch_gap", async () => (await ticksOf(env, "catch_gap")).length >= 2, { timeoutMs: 20_000 });
    await first.stop();
    await sleep(7500);
    const { stream, lines } = captured();
    const second = testRuntime(env, { flows: [gapFlow], logger: pino({ level: "info" }, stream) });
    try {
      await second.start();
    } finally {
      await second.stop();
      await env.cleanup();
    }
    const said = lines.map((l) => JSON.parse(l) as { msg: string; flow?: string; skipped?: number; ran?: number; catchUp?: string });
    const gap = said.find((l) => l.msg === "schedule ticks that fell due while no coordinator ran are skipped, as the flow's catchUp says");
    expect(gap).toMatchObject({ flow: "catch_gap", ran: 0, catchUp: "none" });
    expect(gap!.skipped).toBeGreaterThanOrEqual(2);
  }, 60_000);
});

describe("a cron changed while no coordinator ran", () => {
  const env = isolate("catchcron");
  let runtime: Runtime | undefined;

  afterAll(async () => {
    await runtime?.stop();
    await env.cleanup();
  });

  it("owes no fire time of the new cron from before the restart that brought it", async () => {
    const everySecond = ax.flow({ name: "catch_changed", schedule: "* * * * * *", catchUp: "all", overlap: "allow" }, () => note());
    runtime = testRuntime(env, { flows: [everySecond] });
    await runtime.start();
    await until("two ticks", async () => (await ticksOf(env, "catch_changed")).length >= 2, { timeoutMs: 20_000 });
    await runtime.stop();
    runtime = undefined;
    const lastBefore = (await ticksOf(env, "catch_changed")).at(-1)!.at;
    // Down for 3 seconds: the old cron missed ticks, and so would have the new one.
    await sleep(Math.max(0, lastBefore + 3300 - Date.now()));

    const everyOtherSecond = ax.flow({ name: "catch_changed", schedule: "*/2 * * * * *", catchUp: "all", overlap: "allow" }, () => note());
    const restartedAt = Date.now();
    runtime = testRuntime(env, { flows: [everyOtherSecond] });
    await runtime.start();
    await until("a tick of the new cron", async () => (await ticksOf(env, "catch_changed")).at(-1)!.at > restartedAt, {
      timeoutMs: 20_000,
    });
    await runtime.stop();
    runtime = undefined;
    const caughtUp = (await ticksOf(env, "catch_changed")).filter((t) => t.at > lastBefore && t.at <= restartedAt);
    expect(caughtUp).toEqual([]);
  }, 60_000);
});
