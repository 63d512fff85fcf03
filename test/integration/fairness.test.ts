import { setTimeout as sleep } from "node:timers/promises";
import { rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ax, type Runtime } from "ax-scheduler";
import { isolate, type Isolated } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";
import { attemptSpans, maxOverlap } from "../helpers/limits.js";

const backfillStep = ax.task({ name: "backfill_step" }, async (i: number) => {
  await sleep(20);
  return i;
});
const backfillLike = ax.flow({ name: "backfill_like" }, (i) => {
  backfillStep(i);
});
const pay = ax.task({ name: "pay" }, (order: string) => `paid ${order}`);
const orderPayment = ax.flow({ name: "order_payment_like" }, (order) => {
  pay(order);
});
const slow = ax.task({ name: "slow" }, async () => {
  await sleep(100);
  return "done";
});
const slowFlow = ax.flow({ name: "slow" }, () => {
  slow();
});

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

describe("fair queues and the cluster-wide max_concurrency", () => {
  const envs: Isolated[] = [];
  const runtimes: Runtime[] = [];
  const started = async (runtime: Runtime) => {
    runtimes.push(runtime);
    await runtime.start();
    return runtime;
  };
  afterAll(async () => {
    for (const runtime of runtimes.reverse()) await runtime.stop({ timeout: 2 });
    for (const env of envs) await env.cleanup();
    for (const env of envs) rmSync(join(tmpdir(), `${env.prefix}-runtime.yaml`), { force: true });
  });

  it("a trickle of live runs starts within 1 s (p99) behind a backlog of 5,000 queued runs of another flow", async () => {
    const env = isolate("fair");
    envs.push(env);
    const runtime = await started(testRuntime(env, { flows: [backfillLike, orderPayment], maxConcurrency: 10 }));
    const client = runtime.client();
    for (let i = 0; i < 5000; i += 1000) {
      await client.triggerFlows(
        "backfill_like",
        Array.from({ length: 1000 }, (_, j) => i + j),
      );
    }
    const live: string[] = [];
    for (let i = 0; i < 30; i++) {
      live.push(await client.triggerFlow("order_payment_like", `order-${i}`));
      await sleep(100);
    }
    for (const id of live) expect((await client.waitForRun(id, { timeout: "30s" })).status).toBe("success");
    const waits = await env.sql<{ wait_ms: number }>(
      `select extract(epoch from a.started_at - r.created_at) * 1000 as wait_ms
       from runs r join attempts a on a.run_id = r.id where r.flow = 'order_payment_like'`,
    );
    const backlogLeft = await env.sql<{ n: number }>(
      `select count(*)::int as n from runs where flow = 'backfill_like' and status <> 'success'`,
    );
    const ms = waits.map((w) => Number(w.wait_ms));
    console.log(
      `live runs behind a 5,000-run backlog: trigger -> start p50 ${Math.round(percentile(ms, 50))} ms, p99 ${Math.round(percentile(ms, 99))} ms; backlog left ${backlogLeft[0]!.n}`,
    );
    expect(ms).toHaveLength(30);
    expect(percentile(ms, 99)).toBeLessThan(1000);
    expect(backlogLeft[0]!.n).toBeGreaterThan(1000);
  }, 120_000);

  it("max_concurrency 4 in the YAML holds across two workers of 10 attempts each", async () => {
    const env = isolate("clustermax");
    envs.push(env);
    const config = join(tmpdir(), `${env.prefix}-runtime.yaml`);
    writeFileSync(config, "max_concurrency: 4\n");
    const coordinator = await started(testRuntime(env, { flows: [slowFlow], config, maxConcurrency: 10 }));
    await started(testRuntime(env, { flows: [slowFlow], config, maxConcurrency: 10, roles: ["worker"] }));
    const client = coordinator.client();
    const runIds = await client.triggerFlows(
      "slow",
      Array.from({ length: 40 }, () => null),
    );
    for (const id of runIds) expect((await client.waitForRun(id, { timeout: "60s" })).status).toBe("success");
    const spans = await attemptSpans(env, "slow");
    expect(spans).toHaveLength(40);
    expect(maxOverlap(spans)).toBe(4);
    expect(new Set(spans.map((s) => s.worker)).size).toBe(2);
  }, 60_000);
});
