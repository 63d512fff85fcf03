import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, type Client, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { attemptSpans, maxOverlap, type Span } from "../helpers/limits.js";
import { configAppliedOn, testRuntime } from "../helpers/runtime.js";

const hot = ax.task({ name: "hot_slow" }, async () => {
  await sleep(200);
  return "done";
});
const hotFlow = ax.flow({ name: "hot" }, () => {
  hot();
});
const pooled = ax.task({ name: "hot_pooled", pool: "hot_db" }, async () => {
  await sleep(200);
  return "done";
});
const pooledFlow = ax.flow({ name: "hot_pool" }, () => {
  pooled();
});

const keyedSlow = ax.task({ name: "hot_keyed" }, async (_order: { k: string }) => {
  await sleep(300);
  return "done";
});
const keyedFlow = ax.flow({ name: "hot_keyed" }, (order) => {
  keyedSlow(order);
});

const long = ax.task({ name: "hot_long" }, async (ms: number) => {
  await sleep(ms);
  return ms;
});
const longFlow = ax.flow({ name: "hot_long" }, (ms) => {
  long(ms);
});

const longKeyed = ax.task({ name: "hot_long_keyed" }, async (order: { k: string; ms: number }) => {
  await sleep(order.ms);
  return order.ms;
});
const longKeyedFlow = ax.flow({ name: "hot_long_keyed" }, (order) => {
  longKeyed(order);
});

const rated = ax.task({ name: "hot_rated" }, async (order: { k: string }) => order.k);
const ratedFlow = ax.flow({ name: "hot_rated" }, (order) => {
  rated(order);
});

const capped = ax.task({ name: "hot_capped", concurrency: 1 }, async () => {
  await sleep(200);
  return "done";
});
const cappedFlow = ax.flow({ name: "hot_capped" }, () => {
  capped();
});

const FILE = "config/runtime.yaml";
const yaml = (concurrency: number, pool: number) =>
  ["pools:", `  hot_db: ${pool}`, "tasks:", `  hot_slow: { concurrency: ${concurrency} }`, ""].join("\n");

describe("limits follow the live configuration on 2 worker processes, without a restart", () => {
  const env = isolate("livelimits");
  let a: Runtime;
  let b: Runtime;
  let client: Client;

  beforeAll(async () => {
    a = testRuntime(env, { flows: [hotFlow, pooledFlow, keyedFlow, longFlow, longKeyedFlow, ratedFlow, cappedFlow], maxConcurrency: 10 });
    b = testRuntime(env, {
      flows: [hotFlow, pooledFlow, keyedFlow, longFlow, longKeyedFlow, ratedFlow, cappedFlow],
      maxConcurrency: 10,
      roles: ["worker"],
    });
    await a.start();
    await b.start();
    client = a.client();
  });

  afterAll(async () => {
    await Promise.all([a?.stop({ timeout: 1 }), b?.stop({ timeout: 1 })]);
    redis.disconnect();
    await env.cleanup();
  });

  const redis = new Redis(env.redis);
  /** The parked reasons Redis still holds for jobs of these runs. */
  async function parkedOf(runIds: string[]): Promise<string[]> {
    const jobs = await redis.hkeys(`${env.prefix}:ax:parked`);
    return jobs.filter((job) => runIds.some((id) => job.startsWith(`${id}.`)));
  }

  const appliedEverywhere = (version: number) => configAppliedOn([a, b], version);

  /** Waits until the single node of every run in `ids` is running at once. */
  async function allRunning(ids: string[], what: string): Promise<void> {
    const deadline = Date.now() + 10_000;
    while ((await Promise.all(ids.map((id) => client.getRun(id)))).some((r) => r.tasks[0]?.status !== "running")) {
      if (Date.now() > deadline) throw new Error(`${what} never ran at once`);
      await sleep(50);
    }
  }

  /** Runs `n` runs of `flow` and answers the spans of exactly those runs' attempts. */
  async function burst(flow: string, task: string, n: number): Promise<Span[]> {
    const since = Date.now();
    const ids = await client.triggerFlows(
      flow,
      Array.from({ length: n }, () => null),
    );
    for (const id of ids) expect((await client.waitForRun(id, { timeout: "30s" })).status).toBe("success");
    return (await attemptSpans(env, task)).filter((s) => s.start >= since - 50);
  }

  it("concurrency 1 -> 4 and pool 1 -> 3 apply to the next attempts within 5 s; rollback restores them", async () => {
    const v1 = await client.config.apply(yaml(1, 1), FILE, "alice");
    await appliedEverywhere(v1.version);
    const one = await burst("hot", "hot_slow", 8);
    expect(maxOverlap(one)).toBe(1);
    expect(maxOverlap(await burst("hot_pool", "hot_pooled", 6))).toBe(1);

    const v2 = await client.config.apply(yaml(4, 3), FILE, "bob");
    const appliedMs = await appliedEverywhere(v2.version);
    const four = await burst("hot", "hot_slow", 16);
    const three = await burst("hot_pool", "hot_pooled", 12);
    console.log(`v${v2.version} applied on both processes in ${appliedMs} ms; overlap ${maxOverlap(four)} and pool ${maxOverlap(three)}`);
    expect(maxOverlap(four)).toBe(4);
    expect(new Set(four.map((s) => s.worker)).size).toBe(2);
    expect(maxOverlap(three)).toBe(3);

    const v3 = await client.config.rollback(v1.version, "carol");
    await appliedEverywhere(v3.version);
    expect(maxOverlap(await burst("hot", "hot_slow", 8))).toBe(1);
    expect(maxOverlap(await burst("hot_pool", "hot_pooled", 6))).toBe(1);
  }, 90_000);

  it("a limit per key removed or raised while runs of the key wait in line lets them all go within seconds", async () => {
    for (const [to, label] of [
      ["{}\n", "removed"],
      ["tasks:\n  hot_keyed: { concurrency: { max: 10, key: k } }\n", "raised to 10"],
    ] as const) {
      const v1 = await client.config.apply("tasks:\n  hot_keyed: { concurrency: { max: 1, key: k } }\n", FILE, "alice");
      await appliedEverywhere(v1.version);
      const ids = await client.triggerFlows(
        "hot_keyed",
        Array.from({ length: 8 }, () => ({ k: `K-${label}` })),
      );
      // Wait until the line has formed: one runs, the others are parked behind it.
      const deadline = Date.now() + 10_000;
      while (
        (await Promise.all(ids.map((id) => client.getRun(id)))).filter((r) => r?.tasks[0]?.waitingFor?.startsWith("concurrency key"))
          .length < 5
      ) {
        if (Date.now() > deadline) throw new Error("the runs of one key never lined up");
        await sleep(50);
      }
      // A run cancelled while it waits in line takes its parked reason with it.
      const cancelled = ids.pop()!;
      expect(await parkedOf([cancelled])).not.toEqual([]);
      await client.cancel(cancelled);
      expect(await parkedOf([cancelled])).toEqual([]);
      const changedAt = Date.now();
      const v2 = await client.config.apply(to, FILE, "bob");
      await appliedEverywhere(v2.version);
      for (const id of ids) expect((await client.waitForRun(id, { timeout: "15s" })).status).toBe("success");
      const tookMs = Date.now() - changedAt;
      // Nothing is left in Redis for the key or its runs: with a key per order, leftovers would grow for ever.
      expect(await parkedOf(ids)).toEqual([]);
      expect(await redis.hget(`${env.prefix}:limits:waiting-capacity`, `key:hot_keyed:K-${label}`)).toBeNull();
      expect(await redis.sismember(`${env.prefix}:limits:waiting-keys`, `key:hot_keyed:K-${label}`)).toBe(0);
      console.log(`per-key limit ${label}: the line of 8 drained ${tookMs} ms after the change`);
      // Strictly one at a time the rest of the line needs 7 x 300 ms and more; the sweep runs every 2 s.
      expect(tookMs).toBeLessThan(6000);
    }
  }, 90_000);

  it("a rate limit raised or removed while runs wait for its window lets them go within seconds, task-wide and per key", async () => {
    const cases = [
      ["{ max: 1, per: 1m }", "{ max: 100, per: 1m }", "raised"],
      ["{ max: 1, per: 1h, key: k }", "{ max: 100, per: 1h, key: k }", "raised, per key"],
      ["{ max: 1, per: 1m }", null, "removed"],
      ["{ max: 1, per: 1h, key: k }", null, "removed, per key"],
    ] as const;
    for (const [tight, loose, label] of cases) {
      const v1 = await client.config.apply(`tasks:\n  hot_rated: { rate_limit: ${tight} }\n`, FILE, "erin");
      await appliedEverywhere(v1.version);
      const ids = await client.triggerFlows(
        "hot_rated",
        Array.from({ length: 4 }, () => ({ k: `R-${label}` })),
      );
      // One run takes the window's only start; the rest wait for a window a minute or an hour away.
      const deadline = Date.now() + 10_000;
      for (;;) {
        const runs = await Promise.all(ids.map((id) => client.getRun(id)));
        const waiting = runs.filter((r) => r.tasks[0]?.waitingFor?.startsWith("rate limit")).length;
        if (runs.filter((r) => r.status === "success").length === 1 && waiting === 3) break;
        if (Date.now() > deadline) throw new Error(`the runs never waited for the rate limit (${label})`);
        await sleep(50);
      }
      const changedAt = Date.now();
      const v2 = await client.config.apply(loose ? `tasks:\n  hot_rated: { rate_limit: ${loose} }\n` : "{}\n", FILE, "erin");
      await appliedEverywhere(v2.version);
      for (const id of ids) expect((await client.waitForRun(id, { timeout: "15s" })).status).toBe("success");
      const tookMs = Date.now() - changedAt;
      console.log(`rate limit ${label}: the 3 waiting runs finished ${tookMs} ms after the change`);
      // Each worker looks at its limits as it applies the version (about 50-100 ms on an idle machine).
      expect(tookMs).toBeLessThan(3000);
      expect(await parkedOf(ids)).toEqual([]);
      // A fresh window for the next case.
      await redis.del(`${env.prefix}:limits:rate:rate:hot_rated`, `${env.prefix}:limits:rate:keyrate:hot_rated:R-${label}`);
    }
    await client.config.apply("{}\n", FILE, "erin");
  }, 120_000);

  it("null in YAML lifts a limit the code sets, without a deploy; removing the line restores it", async () => {
    expect(maxOverlap(await burst("hot_capped", "hot_capped", 4))).toBe(1);
    const lifted = await client.config.apply("tasks:\n  hot_capped: { concurrency: null }\n", FILE, "gus");
    await appliedEverywhere(lifted.version);
    const shown = await client.config.effective({ task: "hot_capped" });
    expect(shown.tasks.hot_capped!.find((o) => o.option === "concurrency")).toEqual({
      option: "concurrency",
      value: null,
      source: `yaml v${lifted.version}`,
    });
    expect(maxOverlap(await burst("hot_capped", "hot_capped", 4))).toBe(4);
    const restored = await client.config.apply("{}\n", FILE, "gus");
    await appliedEverywhere(restored.version);
    expect(maxOverlap(await burst("hot_capped", "hot_capped", 4))).toBe(1);
  }, 60_000);

  it("a concurrency added while attempts run counts them: new starts wait until the running ones are under it", async () => {
    const running = await client.triggerFlows("hot_long", [2500, 2500, 2500, 2500, 2500, 2500]);
    await allRunning(running, "the 6 long runs");
    const v = await client.config.apply("tasks:\n  hot_long: { concurrency: 2 }\n", FILE, "dave");
    await appliedEverywhere(v.version);
    // Each worker counts its running attempts against the new limit at its next lease renewal (1 s).
    await sleep(1200);
    const later = await client.triggerFlows("hot_long", [100, 100, 100, 100]);
    for (const id of [...running, ...later]) expect((await client.waitForRun(id, { timeout: "30s" })).status).toBe("success");
    const spans = await attemptSpans(env, "hot_long");
    const ends = spans
      .filter((s) => s.end - s.start >= 2000)
      .map((s) => s.end)
      .sort((x, y) => x - y);
    const starts = spans.filter((s) => s.end - s.start < 2000).map((s) => s.start);
    expect(ends).toHaveLength(6);
    expect(starts).toHaveLength(4);
    // With 6 counted against 2, a start needs 5 of them to have ended.
    for (const start of starts) expect(start).toBeGreaterThanOrEqual(ends[4]!);
    expect(maxOverlap(spans.filter((s) => s.start >= ends[4]!))).toBeLessThanOrEqual(2);
    await client.config.apply("{}\n", FILE, "dave");
  }, 60_000);

  it("a limit per key added while attempts of that key run counts them; other keys start at once", async () => {
    const running = await client.triggerFlows(
      "hot_long_keyed",
      [1, 2, 3].map(() => ({ k: "a", ms: 4000 })),
    );
    await allRunning(running, "the 3 long runs of key a");
    const v = await client.config.apply("tasks:\n  hot_long_keyed: { concurrency: { max: 1, key: k } }\n", FILE, "frank");
    await appliedEverywhere(v.version);
    // Each worker reads the keys of its running attempts at its next lease renewal (1 s), then
    // counts them at once.
    await sleep(1500);
    const later = await client.triggerFlows("hot_long_keyed", [
      { k: "a", ms: 100 },
      { k: "a", ms: 100 },
    ]);
    const [other] = await client.triggerFlows("hot_long_keyed", [{ k: "b", ms: 100 }]);
    const attempt = async (id: string) => {
      const run = await client.waitForRun(id, { timeout: "30s" });
      expect(run.status).toBe("success");
      const only = run.tasks[0]!.attempts[0]!;
      return { start: Date.parse(only.startedAt), end: Date.parse(only.finishedAt!) };
    };
    const long = await Promise.all(running.map(attempt));
    const lastLongEnd = Math.max(...long.map((s) => s.end));
    const queued = await Promise.all(later.map(attempt));
    // 3 running counted against 1: key a's next start waits for all three to end, then one at a time.
    for (const s of queued) expect(s.start).toBeGreaterThanOrEqual(lastLongEnd);
    expect(maxOverlap(queued.map((s) => ({ task: "hot_long_keyed", worker: "", ...s })))).toBe(1);
    expect((await attempt(other!)).start).toBeLessThan(lastLongEnd);
    await client.config.apply("{}\n", FILE, "frank");
  }, 60_000);

  it("a concurrency added during a backlog holds: slots taking the next job with each completion go through the gate again", async () => {
    // 20 worker slots; unlimited, the backlog would drain in about 1.5 s.
    const ids = await client.triggerFlows(
      "hot_long",
      Array.from({ length: 600 }, () => 50),
    );
    await sleep(300);
    const v = await client.config.apply("tasks:\n  hot_long: { concurrency: 8 }\n", FILE, "erin");
    await appliedEverywhere(v.version);
    // Attempts started before the limit end within 50 ms; later starts all pass the gate.
    const limitedFrom = Date.now() + 200;
    for (const id of ids) expect((await client.waitForRun(id, { timeout: "60s" })).status).toBe("success");
    const spans = (await attemptSpans(env, "hot_long")).filter((s) => s.start >= limitedFrom);
    console.log(`${spans.length} attempts started once the limit was in force everywhere; at most ${maxOverlap(spans)} at once`);
    expect(spans.length).toBeGreaterThan(100);
    expect(maxOverlap(spans)).toBeLessThanOrEqual(8);
    await client.config.apply("{}\n", FILE, "erin");
  }, 90_000);
});
