import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, type Client, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { maxOverlap, waitUntil, type Span } from "../helpers/limits.js";
import { testRuntime } from "../helpers/runtime.js";

/** Waits `ms`, or stops early when its run is cancelled. */
const work = (ms: number) => sleep(ms, undefined, { signal: ax.context().signal }).then(() => "done");

const step = ax.task({ name: "user_step" }, (_p: { user_id: string }) => work(200));
const syncUser = ax.flow({ name: "sync_user", concurrency: { max: 1, key: "user_id" } }, (p) => {
  step(p);
});
const longStep = ax.task({ name: "user_long_step" }, (_p: { user_id: string }) => work(1500));
const newestUser = ax.flow({ name: "newest_user", concurrency: { max: 1, key: "user_id", strategy: "cancel_newest" } }, (p) => {
  longStep(p);
});
const latestUser = ax.flow({ name: "latest_user", concurrency: { max: 1, key: "user.id", strategy: "cancel_in_progress" } }, (p) => {
  longStep(p);
});

describe("flow concurrency per business key: at most one run per key, many keys at once", () => {
  const env = isolate("flowkeys");
  let runtime: Runtime;
  let client: Client;

  beforeAll(async () => {
    runtime = testRuntime(env, { flows: [syncUser, newestUser, latestUser], maxConcurrency: 20 });
    await runtime.start();
    client = runtime.client();
  });

  afterAll(async () => {
    await runtime?.stop({ timeout: 1 });
    await env.cleanup();
  });

  /** Each run of the flow as one span, keyed by its payload's user. */
  async function runSpans(flow: string): Promise<(Span & { key: string })[]> {
    const found = await env.sql<{ key: string; start: number; end: number }>(
      `select payload->>'user_id' as key, extract(epoch from started_at) * 1000 as start, extract(epoch from finished_at) * 1000 as "end"
       from runs where flow = $1 and status = 'success'`,
      [flow],
    );
    return found.map((r) => ({ task: flow, worker: "", key: r.key, start: Number(r.start), end: Number(r.end) }));
  }

  it("queue: 12 runs over 3 keys never overlap within a key, the keys run side by side, a held run says why", async () => {
    const runIds = await client.triggerFlows(
      "sync_user",
      Array.from({ length: 12 }, (_, i) => ({ user_id: `u${i % 3}` })),
    );
    expect((await client.getRun(runIds.at(-1)!)).waitingFor).toMatch(/^concurrency key u2 \(1\/1\)$/);
    for (const id of runIds) expect((await client.waitForRun(id, { timeout: "30s" })).status).toBe("success");
    const spans = await runSpans("sync_user");
    for (const key of ["u0", "u1", "u2"]) expect(maxOverlap(spans.filter((s) => s.key === key)), key).toBe(1);
    expect(maxOverlap(spans)).toBe(3);
  });

  it("cancel_newest: a run whose key is busy is cancelled with the reason", async () => {
    const first = await client.triggerFlow("newest_user", { user_id: "n1" });
    await waitUntil(async () => (await client.getRun(first)).status === "running", 10_000);
    const second = await client.triggerFlow("newest_user", { user_id: "n1" });
    const dropped = await client.waitForRun(second, { timeout: "10s" });
    expect(dropped.status).toBe("cancelled");
    expect(dropped.tasks[0]!.error?.message).toContain("concurrency key n1 (1/1) was busy: strategy cancel_newest");
    expect((await client.waitForRun(first, { timeout: "10s" })).status).toBe("success");
  });

  it("cancel_in_progress: a new run cancels the run holding its key (a nested key path), then starts", async () => {
    const first = await client.triggerFlow("latest_user", { user: { id: "l1" } });
    await waitUntil(async () => (await client.getRun(first)).tasks[0]!.status === "running", 10_000);
    const second = await client.triggerFlow("latest_user", { user: { id: "l1" } });
    const superseded = await client.waitForRun(first, { timeout: "10s" });
    expect(superseded.status).toBe("cancelled");
    expect(superseded.tasks[0]!.error?.message).toContain(`superseded by run ${second} on concurrency key l1 (1/1)`);
    expect((await client.waitForRun(second, { timeout: "10s" })).status).toBe("success");
  });

  it("cancel_in_progress: of a burst of runs of one key, only the newest runs, whatever order admission sees them in", async () => {
    const first = await client.triggerFlow("latest_user", { user: { id: "b1" } });
    await waitUntil(async () => (await client.getRun(first)).tasks[0]!.status === "running", 10_000);
    const burst = await client.triggerFlows(
      "latest_user",
      Array.from({ length: 4 }, () => ({ user: { id: "b1" } })),
    );
    const newest = burst.at(-1)!;
    expect((await client.waitForRun(newest, { timeout: "10s" })).status).toBe("success");
    for (const id of [first, ...burst.slice(0, -1)]) {
      const run = await client.waitForRun(id, { timeout: "10s" });
      expect(run.status, id).toBe("cancelled");
      expect(run.tasks[0]!.error?.message, id).toContain(`superseded by run ${newest} on concurrency key b1 (1/1)`);
    }
    // A burst with no run holding the key: the newest alone starts.
    const alone = await client.triggerFlows(
      "latest_user",
      Array.from({ length: 3 }, () => ({ user: { id: "b2" } })),
    );
    const runs = await Promise.all(alone.map((id) => client.waitForRun(id, { timeout: "10s" })));
    expect(runs.map((r) => r.status)).toEqual(["cancelled", "cancelled", "success"]);
    expect(runs.every((r) => r.startedAt === null || r.id === alone[2])).toBe(true);
  });

  it("300 held runs of one key do not hold back other keys: each starts within 1 s", async () => {
    await client.triggerFlows(
      "sync_user",
      Array.from({ length: 300 }, () => ({ user_id: "hot" })),
    );
    const others = await client.triggerFlows(
      "sync_user",
      Array.from({ length: 5 }, (_, i) => ({ user_id: `cold${i}` })),
    );
    for (const id of others) expect((await client.waitForRun(id, { timeout: "10s" })).status).toBe("success");
    const waits = await env.sql<{ ms: number }>(
      `select extract(epoch from started_at - created_at) * 1000 as ms from runs where id = any($1::uuid[])`,
      [others],
    );
    const slowest = Math.max(...waits.map((w) => Number(w.ms)));
    console.log(`5 other keys behind 300 held runs of one key: slowest start ${Math.round(slowest)} ms after its trigger`);
    expect(slowest).toBeLessThan(1000);
  });
});
