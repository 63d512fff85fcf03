import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Client, Runtime } from "ax-scheduler";
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
