import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client, type Runtime } from "ax-scheduler";
import { everySecond } from "../fixtures/every-second-flow.js";
import { isolate } from "../helpers/isolated.js";
import { startAx, type Child } from "../helpers/processes.js";
import { testRuntime } from "../helpers/runtime.js";
import { steps, ticksOf } from "../helpers/schedule-ticks.js";

describe("a 1-second schedule with two coordinator processes", () => {
  const env = isolate("sched2");
  const coordinators: Child[] = [];
  let worker: Runtime;
  let client: Client;

  beforeAll(async () => {
    const args = ["coordinator", "test/fixtures/every-second-flow.ts", "--storage", env.storage, "--prefix", env.prefix];
    for (let i = 0; i < 2; i++) coordinators.push(startAx(args, { DATABASE_URL: env.storage, AX_LOG_LEVEL: "info" }));
    worker = testRuntime(env, { flows: [everySecond], roles: ["worker"] });
    await worker.start();
    client = worker.client();
    await Promise.all(coordinators.map((c) => c.waitFor(/ax coordinator started/, 50_000)));
  }, 60_000);

  afterAll(async () => {
    await Promise.all(coordinators.map((c) => c.stop()));
    await worker?.stop();
    await env.cleanup();
  });

  it("makes one run per tick for 8 s: no gaps, no doubles, logicalDate reaches the task", async () => {
    await sleep(8000);
    await Promise.all(coordinators.map((c) => c.stop()));
    const ticks = await ticksOf(env, "every_second");
    expect(ticks.length).toBeGreaterThanOrEqual(7);
    expect(steps(ticks).every((s) => s === 1)).toBe(true);
    expect(ticks.every((t) => t.status === "created" && t.run_trigger === "schedule" && t.run_logical === t.at)).toBe(true);
    // The target is p99 <= 1 s from fire time to run created; on this shared machine it is reported, not asserted.
    const lags = ticks.map((t) => t.created! - t.at).sort((a, b) => a - b);
    console.info(`schedule lag ms: median ${lags[Math.floor(lags.length / 2)]}, max ${lags.at(-1)} over ${lags.length} ticks`);
    expect(lags[0]!).toBeGreaterThanOrEqual(0);
    const runs = await env.sql<{ n: string; dates: string }>(
      "select count(*) as n, count(distinct logical_date) as dates from runs where flow = 'every_second'",
    );
    expect(Number(runs[0]!.n)).toBe(ticks.length);
    expect(Number(runs[0]!.dates)).toBe(ticks.length);
    for (const tick of ticks) {
      const run = await client.waitForRun(tick.run_id!, { timeout: "30s" });
      expect(run.status).toBe("success");
      expect(run.logicalDate && new Date(run.logicalDate).getTime()).toBe(tick.at);
      expect(run.tasks[0]!.result).toBe(new Date(tick.at).toISOString());
    }
  }, 60_000);
});

describe("a coordinator frozen for 9 s (SIGSTOP, as a suspended machine)", () => {
  const env = isolate("sched_frozen");
  let coordinator: Child | undefined;

  afterAll(async () => {
    coordinator?.process.kill("SIGCONT");
    await coordinator?.stop();
    await env.cleanup();
  });

  it("does not replay the ticks it missed when catchUp is none: only those a few seconds late run", async () => {
    const args = ["coordinator", "test/fixtures/every-second-flow.ts", "--storage", env.storage, "--prefix", env.prefix];
    coordinator = startAx(args, { DATABASE_URL: env.storage, AX_LOG_LEVEL: "info" });
    await coordinator.waitFor(/ax coordinator started/, 50_000);
    const deadline = Date.now() + 20_000;
    while ((await ticksOf(env, "every_second")).length < 2 && Date.now() < deadline) await sleep(200);
    const frozenAt = Date.now();
    coordinator.process.kill("SIGSTOP");
    await sleep(9000);
    coordinator.process.kill("SIGCONT");
    const resumedAt = Date.now();
    await coordinator.waitFor(/missed while this coordinator could not run or reach PostgreSQL are skipped/, 10_000);
    await sleep(2500);
    const ticks = await ticksOf(env, "every_second");

    // Paused, the schedule makes no ticks and so misses none: a second freeze warns of nothing.
    const client = new Client({ storage: env.storage, redis: env.redis, prefix: env.prefix });
    await client.pauseSchedule("every_second");
    const warned = () => coordinator!.output().split("missed while this coordinator").length - 1;
    const before = warned();
    coordinator.process.kill("SIGSTOP");
    await sleep(7000);
    coordinator.process.kill("SIGCONT");
    await sleep(2500);
    await client.close();
    await coordinator.stop();
    expect(before).toBeGreaterThanOrEqual(1);
    expect(warned()).toBe(before);

    const inGap = ticks.filter((t) => t.at > frozenAt && t.at <= resumedAt);
    // Nine ticks fell due while frozen; those over 5 s late when it woke were missed and are skipped.
    expect(inGap.length).toBeLessThanOrEqual(6);
    const after = ticks.filter((t) => t.at > resumedAt);
    expect(after.length).toBeGreaterThanOrEqual(1);
    expect(steps(after).every((s) => s === 1)).toBe(true);
  }, 60_000);
});
