import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { ax } from "ax-scheduler";
import { everySecond } from "../fixtures/every-second-flow.js";
import { runtimeOnPrivateRedis } from "../helpers/private-redis-runtime.js";
import { steps, ticksOf } from "../helpers/schedule-ticks.js";

describe("a 1-second schedule while Redis is down for 8 s", () => {
  const { env, runtime, redisDown, redisBack } = runtimeOnPrivateRedis("sched_redis", { flows: [everySecond], logLevel: "fatal" });

  it("records every tick of the outage in PostgreSQL and runs each once Redis is back", { timeout: 90_000 }, async () => {
    await sleep(2500);
    await redisDown();
    const downFrom = Date.now();
    await sleep(8000);
    const downTo = Date.now();
    await redisBack();
    await sleep(3000);
    const ticks = (await ticksOf(env, "every_second")).filter((t) => t.at <= Date.now() - 1500);
    const during = ticks.filter((t) => t.at > downFrom + 1000 && t.at < downTo - 1000);
    expect(during.length).toBeGreaterThanOrEqual(6);
    expect(steps(ticks)).toEqual(ticks.slice(1).map(() => 1));
    expect(ticks.every((t) => t.status === "created" && t.run_id !== null)).toBe(true);
    const client = runtime().client();
    for (const tick of during) expect((await client.waitForRun(tick.run_id!, { timeout: "60s" })).status).toBe("success");
  });
});

const slow = ax.task({ name: "cancel_prev_slow" }, async () => {
  await sleep(3000, undefined, { signal: ax.context().signal }).catch(() => undefined);
});
const cancelling = ax.flow({ name: "cancel_prev_every_second", schedule: "* * * * * *", overlap: "cancel_previous" }, () => {
  slow();
});

describe("a 1-second cancel_previous schedule while Redis is down for 8 s", () => {
  const { env, redisDown, redisBack } = runtimeOnPrivateRedis("sched_redis_cancel", { flows: [cancelling], logLevel: "fatal" });

  it("records every tick on time, each cancelling the one before, though a cancel cannot reach Redis", { timeout: 90_000 }, async () => {
    await sleep(2500);
    await redisDown();
    await sleep(8000);
    await redisBack();
    await sleep(3000);
    const ticks = (await ticksOf(env, "cancel_prev_every_second")).filter((t) => t.at <= Date.now() - 1500);
    expect(ticks.length).toBeGreaterThanOrEqual(10);
    expect(steps(ticks)).toEqual(ticks.slice(1).map(() => 1));
    expect(ticks.every((t) => t.status === "created")).toBe(true);
    // On time: a cancel waiting for Redis (5 s) must not hold the loop.
    expect(ticks.filter((t) => t.created! - t.at > 2000).map((t) => t.created! - t.at)).toEqual([]);
    // Every run but the newest few was cancelled by the tick after it.
    expect(ticks.slice(0, -4).every((t) => t.run_status === "cancelled")).toBe(true);
  });
});
