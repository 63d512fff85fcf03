import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, type Runtime } from "ax-scheduler";
import { openStore, startAttempts, type Store } from "@ax/store";
import { isolate } from "../helpers/isolated.js";
import { startPrivatePostgres, type PrivatePostgres } from "../helpers/private-postgres.js";
import { testRuntime } from "../helpers/runtime.js";

const step = ax.task({ name: "lost_step", queue: "elsewhere" }, (n: number) => n);
const flow = ax.flow({ name: "lost_outcome" }, (n) => {
  step(n);
});

/**
 * With durability "run" a step's outcome may be committed without waiting for the disk, and a
 * PostgreSQL crash can lose it: the node is then recorded as running under a worker that is no
 * longer executing it, and whose lease is alive. The worker must notice the restart itself.
 */
describe("an outcome lost in a PostgreSQL restart", { timeout: 60_000 }, () => {
  const env = isolate("lostoutcome");
  let server: PrivatePostgres;
  let runtime: Runtime;
  let store: Store;
  let pool: pg.Pool;

  beforeAll(async () => {
    server = await startPrivatePostgres();
    // The worker serves no queue of this flow's task, so only the fabricated attempt below runs it.
    runtime = testRuntime({ ...env, storage: server.url }, { flows: [flow], queues: ["default"], worker: { heartbeatMs: 200 } });
    await runtime.start();
    store = openStore({ url: server.url, poolSize: 2 });
    pool = new pg.Pool({ connectionString: server.url, max: 2 });
    pool.on("error", () => {});
  });

  afterAll(async () => {
    try {
      await runtime?.stop();
      await store?.close();
      await pool?.end();
    } finally {
      await server?.destroy();
      await env.cleanup();
    }
  });

  it("is noticed by the worker after the restart and its node runs again, without charging a retry", async () => {
    const runId = await runtime.client().triggerFlow("lost_outcome", 7);
    const [node] = (await pool.query<{ node_key: string }>(`select node_key from node_runs where run_id = $1`, [runId])).rows;
    // As if this worker had started the attempt and its completion had been lost with the crash.
    const [started] = await startAttempts(store.db, runtime.workerId!, [{ runId, nodeKey: node!.node_key, attempt: 1, upstreamKeys: [] }]);
    expect(started).toBeDefined();
    await store.close();

    await server.restart();
    store = openStore({ url: server.url, poolSize: 2 });

    let row: { status: string; attempt: number } | undefined;
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      row = (await pool.query(`select status, attempt from node_runs where run_id = $1`, [runId]).catch(() => ({ rows: [] }))).rows[0];
      if (row?.attempt === 2) break;
      await sleep(100);
    }
    expect(row).toEqual({ status: "queued", attempt: 2 });
    const attempts = (await pool.query(`select n, outcome, error->>'name' as error from attempts where run_id = $1 order by n`, [runId]))
      .rows;
    expect(attempts).toEqual([{ n: 1, outcome: "crashed", error: "AxOutcomeLostError" }]);
    // The task has no retries: a lost outcome is handed back, not counted as a failure.
    expect((await pool.query(`select status from runs where id = $1`, [runId])).rows[0].status).toBe("running");
  });
});
