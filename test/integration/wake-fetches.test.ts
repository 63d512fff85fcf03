import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { ax, type Client, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { startPrivateRedis, type Child } from "../helpers/processes.js";
import { testRuntime } from "../helpers/runtime.js";

const ping = ax.task({ name: "wake_ping" }, (n: number) => n);
const pingFlow = ax.flow({ name: "wake_flow" }, (input) => ping(input as never));

/** Times Redis ran a command, from its own statistics: the private server sees only this test. */
async function calls(redis: Redis, command: string): Promise<number> {
  const stats = (await redis.info("commandstats")).split("\n");
  const line = stats.find((l) => l.startsWith(`cmdstat_${command}:`));
  return Number(line?.match(/calls=(\d+)/)?.[1] ?? 0);
}

describe("waking workers for new jobs", () => {
  const env = isolate("wake");
  let server: { url: string; port: number; child: Child };
  let admin: Redis;
  let runtime: Runtime;
  let client: Client;

  beforeAll(async () => {
    server = await startPrivateRedis();
    admin = new Redis(server.url);
    runtime = testRuntime({ ...env, redis: server.url }, { flows: [pingFlow], maxConcurrency: 50 });
    await runtime.start();
    client = runtime.client();
    await client.waitForRun(await client.triggerFlow("wake_flow", 0), { timeout: "20s" });
  }, 60_000);

  afterAll(async () => {
    await runtime?.stop();
    admin?.disconnect();
    await server?.child.stop();
    await env.cleanup();
  });

  it("a run triggered alone costs a few fetches, not one per idle fetcher of the worker", { timeout: 60_000 }, async () => {
    const runs = 30;
    // BullMQ takes a job from the wait list with one RPOPLPUSH inside each fetch script, found or not.
    const before = await calls(admin, "rpoplpush");
    for (let i = 1; i <= runs; i++) {
      const run = await client.waitForRun(await client.triggerFlow("wake_flow", i), { timeout: "20s" });
      expect(run.status).toBe("success");
    }
    const perRun = ((await calls(admin, "rpoplpush")) - before) / runs;
    // One fetch takes the job, the completion looks for the next, and one more fetch may probe
    // after a find; every idle fetcher of the 16 went to Redis on each wake before.
    expect(perRun).toBeGreaterThanOrEqual(1);
    expect(perRun).toBeLessThanOrEqual(6);
  });
});
