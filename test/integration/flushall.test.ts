import { Writable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { ax, type Client, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { startPrivateRedis, type Child } from "../helpers/processes.js";
import { testRuntime } from "../helpers/runtime.js";
import { SideEffects } from "../helpers/side-effects.js";

const RUNS = 100;
const NODES = 4;

describe("FLUSHALL with 100 runs in flight loses no run", () => {
  const env = isolate("flushall");
  const effects = new SideEffects(env.storage);
  let redisServer: Child;
  let redis: Redis;
  let runtime: Runtime;
  let client: Client;
  const logged: string[] = [];

  /** Each execution is recorded in PostgreSQL, then takes 50–200 ms so attempts are in flight at the flush. */
  async function work<T>(value: T): Promise<T> {
    const { runId, nodeKey } = ax.context();
    await effects.record(runId, nodeKey);
    await sleep(50 + Math.random() * 150);
    return value;
  }

  const first = ax.task({ name: "first" }, (n: number) => work(n));
  const left = ax.task({ name: "left" }, (n: number) => work(n * 2));
  const right = ax.task({ name: "right" }, (n: number) => work(n * 3));
  const last = ax.task({ name: "last" }, (a: number, b: number) => work(a + b));
  const slowDiamond = ax.flow({ name: "slow_diamond" }, (input) => {
    const n = first(input);
    last(left(n), right(n));
  });

  beforeAll(async () => {
    const server = await startPrivateRedis();
    redisServer = server.child;
    redis = new Redis(server.url);
    // The private Redis is the only one this cluster sees, so FLUSHALL touches no other test.
    runtime = testRuntime(
      { ...env, redis: server.url },
      {
        flows: [slowDiamond],
        maxConcurrency: 20,
        // Attempts running at the flush end with BullMQ "Missing key" warnings, expected here: the
        // log is kept, not printed, to find the reconciler's own line in it.
        logger: pino(
          { level: "warn" },
          new Writable({
            write(chunk: Buffer, _encoding, done) {
              logged.push(...chunk.toString("utf8").split("\n").filter(Boolean));
              done();
            },
          }),
        ),
      },
    );
    await runtime.start();
    client = runtime.client();
    await effects.init();
  });

  afterAll(async () => {
    await runtime?.stop();
    redis?.disconnect();
    await redisServer?.stop();
    await effects.close();
    await env.cleanup();
  });

  it("rebuilds the hot queue from PostgreSQL: every run succeeds, every node succeeds exactly once", async () => {
    // The reconciler's first pass marks Redis; a flush removes the mark, which is how it tells a loss.
    while ((await redis.exists(`${env.prefix}:reconciler:epoch`)) === 0) await sleep(50);
    const runIds = await Promise.all(Array.from({ length: RUNS }, (_, i) => client.triggerFlow("slow_diamond", i)));

    // Flush once work is under way: some attempts running, more still waiting in Redis.
    let inFlight = { running: 0, done: 0 };
    const deadline = Date.now() + 20_000;
    while (inFlight.running < 5 || inFlight.done < 20) {
      if (Date.now() > deadline) throw new Error(`work never got under way: ${JSON.stringify(inFlight)}`);
      await sleep(20);
      const [row] = await env.sql<{ running: number; done: number }>(
        `select count(*) filter (where status = 'running')::int as running, count(*) filter (where status = 'success')::int as done from node_runs`,
      );
      inFlight = row!;
    }
    // Each task has its own queue (`default.<task>`).
    const lengths = await Promise.all(["first", "left", "right", "last"].map((t) => redis.llen(`${env.prefix}:default.${t}:wait`)));
    const waitingJobs = lengths.reduce((a, b) => a + b, 0);
    expect(await redis.flushall()).toBe("OK");
    expect(inFlight.running).toBeGreaterThanOrEqual(5);
    expect(waitingJobs).toBeGreaterThan(0);

    const runs = [];
    for (const id of runIds) runs.push(await client.waitForRun(id, { timeout: "40s" }));

    expect(runs.filter((r) => r.status !== "success").map((r) => `${r.id} ${r.status}`)).toEqual([]);
    for (const run of runs) {
      const n = run.payload as number;
      expect(run.tasks.map((t) => [t.key, t.status, t.result])).toEqual([
        ["first", "success", n],
        ["left", "success", 2 * n],
        ["right", "success", 3 * n],
        ["last", "success", 5 * n],
      ]);
      // No worker died, so no attempt was lost: one successful attempt per node.
      for (const task of run.tasks) expect(task.attempts.map((a) => a.outcome)).toEqual(["success"]);
    }
    expect(await effects.countsNotOne(NODES, runIds)).toEqual([]);
    // The operator learns why jobs reappeared: the reconciler says Redis lost its data.
    expect(logged.some((l) => l.includes("Redis lost its data since the last pass"))).toBe(true);
  });
});
