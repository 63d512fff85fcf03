import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pino from "pino";
import { ax, type Runtime } from "ax-scheduler";
import { connectRedis, nodeJobId, QueueRegistry, Reconciler } from "@ax/coordinator";
import { openStore, type Store } from "@ax/store";
import type { Redis } from "ioredis";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

const FAN_OUT = 50;
const RUNS = 120;
const HEALTHY = FAN_OUT * RUNS;
const LOST = 3;
const PAGE = 1000;

const leaf = ax.task({ name: "backlog_leaf" }, (n: number) => n);
const wide = ax.flow({ name: "backlog_wide" }, (input) => {
  for (let i = 0; i < FAN_OUT; i++) leaf(input as never);
});

describe("the reconciler behind a large healthy backlog", () => {
  const env = isolate("backlog");
  let runtime: Runtime;
  let store: Store;
  let redis: Redis;
  let queues: QueueRegistry;
  let reconciler: Reconciler;

  beforeAll(async () => {
    // API role only: it registers the flow, and no worker drains the backlog and no other
    // reconciler competes for the pass lock.
    runtime = testRuntime(env, { flows: [wide], roles: ["api"], port: 0 });
    await runtime.start();
    store = openStore({ url: env.storage });
    const log = pino({ level: "silent" });
    redis = connectRedis(env.redis, log);
    queues = new QueueRegistry(redis, env.prefix, log);
    reconciler = new Reconciler(store.db, queues, log, async () => new Map(), { batch: PAGE, staleMs: 0 });
  }, 90_000);

  afterAll(async () => {
    await queues?.close();
    redis?.disconnect();
    await store?.close();
    await runtime?.stop();
    await env.cleanup();
  });

  it("pages through every candidate, re-adds exactly the lost jobs, and does not re-check healthy ones", { timeout: 120_000 }, async () => {
    const client = runtime.client();
    for (let i = 0; i < RUNS; i++) await client.triggerFlow("backlog_wide", i);
    const newest = await client.triggerFlow("backlog_wide", RUNS);
    const lost = await env.sql<{ run_id: string; node_key: string; attempt: number; queue: string; task: string }>(
      "select run_id, node_key, attempt, queue, task from node_runs where run_id = $1 order by node_key limit $2",
      [newest, LOST],
    );
    for (const n of lost) expect(await queues.forNode(n).remove(nodeJobId(n.run_id, n.node_key, n.attempt))).toBe(1);
    const total = HEALTHY + FAN_OUT;

    const first = await reconciler.runPass();
    expect(first).toMatchObject({ candidates: total, checked: total, requeued: LOST });
    expect(first.pages).toBeGreaterThan(total / PAGE);
    for (const n of lost) expect(await queues.forNode(n).getJob(nodeJobId(n.run_id, n.node_key, n.attempt))).toBeDefined();

    const second = await reconciler.runPass();
    expect(second).toMatchObject({ candidates: total, checked: 0, requeued: 0 });

    // Redis losing its data (here: the marker the reconciler keeps there) makes every job suspect again.
    await redis.del(`${env.prefix}:reconciler:epoch`);
    const afterLoss = await reconciler.runPass();
    expect(afterLoss).toMatchObject({ candidates: total, checked: total, requeued: 0 });
  });
});
