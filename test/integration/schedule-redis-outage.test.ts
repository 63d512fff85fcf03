import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Runtime } from "ax-scheduler";
import { everySecond } from "../fixtures/every-second-flow.js";
import { isolate } from "../helpers/isolated.js";
import { startPrivateRedis, type Child } from "../helpers/processes.js";
import { testRuntime } from "../helpers/runtime.js";
import { steps, ticksOf } from "../helpers/schedule-ticks.js";

describe("a 1-second schedule while Redis is down for 8 s", () => {
  const env = isolate("sched_redis");
  let server: { url: string; port: number; child: Child };
  let runtime: Runtime;

  beforeAll(async () => {
    server = await startPrivateRedis();
    runtime = testRuntime({ ...env, redis: server.url }, { flows: [everySecond], logLevel: "fatal" });
    await runtime.start();
  }, 60_000);

  afterAll(async () => {
    await runtime?.stop({ timeout: 2 });
    await server?.child.stop();
    await env.cleanup();
  });

  it("records every tick of the outage in PostgreSQL and runs each once Redis is back", { timeout: 90_000 }, async () => {
    await sleep(2500);
    await server.child.stop();
    const downFrom = Date.now();
    await sleep(8000);
    const downTo = Date.now();
    server = await startPrivateRedis(server.port);
    await sleep(3000);
    const ticks = (await ticksOf(env, "every_second")).filter((t) => t.at <= Date.now() - 1500);
    const during = ticks.filter((t) => t.at > downFrom + 1000 && t.at < downTo - 1000);
    expect(during.length).toBeGreaterThanOrEqual(6);
    expect(steps(ticks)).toEqual(ticks.slice(1).map(() => 1));
    expect(ticks.every((t) => t.status === "created" && t.run_id !== null)).toBe(true);
    const client = runtime.client();
    for (const tick of during) expect((await client.waitForRun(tick.run_id!, { timeout: "60s" })).status).toBe("success");
  });
});
