import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, parseRuntimeConfig, type Client, type Runtime } from "ax-scheduler";
import { markConfigVersion } from "@ax/coordinator";
import { insertConfigVersion, openStore, type Json } from "@ax/store";
import { isolate } from "../helpers/isolated.js";
import { attemptSpans, maxOverlap } from "../helpers/limits.js";
import { configAppliedOn, testRuntime } from "../helpers/runtime.js";

const slow = ax.task({ name: "gated_slow" }, async () => {
  await sleep(400);
  return "done";
});
const slowFlow = ax.flow({ name: "gated_slow" }, () => {
  slow();
});

const FILE = "config/runtime.yaml";
const concurrency = (n: number) => `tasks:\n  gated_slow: { concurrency: ${n} }\n`;

/**
 * Two worker processes that hear of a new config version only through the limit gate: no
 * announcement, and a poll a minute apart. A version stored and marked in Redis must still decide
 * their next starts, because the gate sends a process on an older version to catch up first.
 */
describe("the limit gate never decides a start by an older config version than the newest marked", () => {
  const env = isolate("cfggate");
  let a: Runtime;
  let b: Runtime;
  let client: Client;
  const redis = new Redis(env.redis);

  beforeAll(async () => {
    a = testRuntime(env, { flows: [slowFlow], maxConcurrency: 5, configPollMs: 60_000 });
    b = testRuntime(env, { flows: [slowFlow], maxConcurrency: 5, configPollMs: 60_000, roles: ["worker"] });
    await a.start();
    await b.start();
    client = a.client();
  });

  afterAll(async () => {
    await Promise.all([a?.stop({ timeout: 1 }), b?.stop({ timeout: 1 })]);
    redis.disconnect();
    await env.cleanup();
  });

  it("a version stored and marked, never announced, applies to the next starts on both processes", async () => {
    const v1 = await client.config.apply(concurrency(1), FILE, "alice");
    await configAppliedOn([a, b], v1.version);
    // Stored as `ax config apply` stores it, but nobody is told: only the mark says it exists.
    const store = openStore({ url: env.storage });
    const parsed = parseRuntimeConfig(concurrency(3), FILE) as unknown as Json;
    const v2 = await insertConfigVersion(store.db, { yaml: concurrency(3), parsed, author: "bob", file: FILE }).finally(() =>
      store.close(),
    );
    await markConfigVersion(redis, env.prefix, v2.version);

    const since = Date.now();
    const ids = await client.triggerFlows("gated_slow", [null, null, null, null, null, null]);
    for (const id of ids) expect((await client.waitForRun(id, { timeout: "20s" })).status).toBe("success");
    const spans = (await attemptSpans(env, "gated_slow")).filter((s) => s.start >= since - 50);
    // Under v1 the six would run one at a time; the gate made each process apply v2 first.
    expect(maxOverlap(spans)).toBe(3);
    expect([a.configVersion, b.configVersion]).toEqual([v2.version, v2.version]);
    expect(Date.now() - since).toBeLessThan(30_000);
  }, 60_000);
});
