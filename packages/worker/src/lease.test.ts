import { setTimeout as sleep } from "node:timers/promises";
import pino from "pino";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeRedis, connectRedis, QueueRegistry } from "@ax/coordinator";
import { migrate, openStore, type Store } from "@ax/store";
import { isolate } from "../../../test/helpers/isolated.js";
import { createWorkerMetrics } from "./metrics.js";
import { NodeWorker } from "./node-worker.js";

const POOL_SIZE = 3;

describe("worker leases", { timeout: 60_000 }, () => {
  const env = isolate("leases");
  const log = pino({ level: "silent" });
  let store: Store;
  let queues: QueueRegistry;

  beforeAll(async () => {
    store = openStore({ url: env.storage, poolSize: POOL_SIZE });
    await migrate(store);
    queues = new QueueRegistry(connectRedis(env.redis, log), env.prefix, log);
  });

  afterAll(async () => {
    await queues.close();
    closeRedis(queues.connection);
    await store.close();
    await env.cleanup();
  });

  const startWorker = async (options: { heartbeatMs: number; deadWorkerRetentionMs?: number }) => {
    const worker = new NodeWorker({
      db: store.db,
      leasesDb: store.leases,
      connection: queues.connection,
      queues,
      queueNames: ["default"],
      concurrency: 1,
      tasks: { get: () => undefined, names: () => [] },
      log,
      metrics: createWorkerMetrics(new Registry()),
      ...options,
    });
    await worker.start();
    return worker;
  };

  const heartbeatOf = async (id: string) =>
    (await env.sql<{ at: Date }>(`select heartbeat_at as at from workers where id = $1`, [id]))[0]!.at.getTime();

  it("keep renewing while long transactions hold every connection of the main pool", async () => {
    const worker = await startWorker({ heartbeatMs: 200 });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const transactions = Array.from({ length: POOL_SIZE }, () =>
      store.db.transaction(async (tx) => {
        await tx.execute("select 1");
        await held;
      }),
    );
    try {
      // The main pool is exhausted: one more statement on it waits.
      const blocked = store.db.execute("select 1");
      const answered = await Promise.race([blocked.then(() => true), sleep(500, false)]);
      expect(answered).toBe(false);
      const before = await heartbeatOf(worker.id);
      await sleep(2000);
      const after = await heartbeatOf(worker.id);
      console.log(`heartbeat advanced ${after - before} ms in 2 s with the main pool exhausted`);
      expect(after - before).toBeGreaterThan(1000);
      release();
      await blocked;
    } finally {
      release();
      await Promise.all(transactions);
      await worker.stop(1);
    }
  });

  it("delete workers dead longer than the retention, unless a running attempt names them", async () => {
    await env.sql(`insert into workers (id, hostname, pid, queues, heartbeat_at) values
      ('dead-idle', 'h', 1, '{default}', now() - interval '2 hours'),
      ('dead-busy', 'h', 2, '{default}', now() - interval '2 hours'),
      ('recent', 'h', 3, '{default}', now() - interval '10 minutes')`);
    const [def] = await env.sql<{ id: number }>(
      `insert into flow_definitions (name, version, hash, dag) values ('f', 1, 'h', '{"flow":"f","nodes":[]}') returning id`,
    );
    const runId = "00000000-0000-4000-8000-000000000001";
    await env.sql(
      `insert into runs (id, flow, flow_version_id, status, trigger, nodes_remaining) values ($1, 'f', $2, 'running', 'manual', 1)`,
      [runId, def!.id],
    );
    await env.sql(
      `insert into node_runs (run_id, node_key, task, queue, status, deps_remaining, attempt) values ($1, 'a', 't', 'default', 'running', 0, 1)`,
      [runId],
    );
    await env.sql(
      `insert into attempts (run_id, node_key, n, worker, started_at) values ($1, 'a', 1, 'dead-busy', now() - interval '2 hours')`,
      [runId],
    );

    const worker = await startWorker({ heartbeatMs: 200, deadWorkerRetentionMs: 3_600_000 });
    try {
      const ids = (await env.sql<{ id: string }>(`select id from workers order by id`)).map((r) => r.id);
      expect(ids).toEqual(["dead-busy", "recent", worker.id].sort());
    } finally {
      await worker.stop(1);
    }
  });
});
