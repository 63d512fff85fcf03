import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Client, Runtime } from "ax-scheduler";
import { restartFlow } from "../fixtures/pg-restart-worker.js";
import { isolate } from "../helpers/isolated.js";
import { startPrivatePostgres, type PrivatePostgres } from "../helpers/private-postgres.js";
import { testRuntime } from "../helpers/runtime.js";
import { spawnWorker, type WorkerProcess } from "../helpers/processes.js";

const RUNS = 200;
const FIXTURE = "test/fixtures/pg-restart-worker.ts";
const OUTAGE_MS = 2000;
/** Set to keep every worker's info-level log there, to see what happened to each attempt. */
const LOG_DIR = process.env.AX_PG_RESTART_LOG_DIR;

// "immediate" is a crash: intermediate steps committed without waiting for the disk (durability
// "run", the default) are lost, and their workers must notice the restart and run them again.
describe.each(["fast", "immediate"] as const)("PostgreSQL stopped (%s) and restarted while 200 runs are in flight", (mode) => {
  // Redis is shared (its own prefix); PostgreSQL is a private cluster this test may take down.
  const env = isolate(`pgrestart_${mode}`);
  const workers: WorkerProcess[] = [];
  let server: PrivatePostgres;
  let runtime: Runtime;
  let client: Client;
  let pool: pg.Pool;

  /** One query against the private cluster; undefined while it is down. */
  const tryCount = async (query: string): Promise<number | undefined> => {
    try {
      return (await pool.query<{ n: number }>(query)).rows[0]!.n;
    } catch {
      return undefined;
    }
  };

  beforeAll(async () => {
    server = await startPrivatePostgres();
    const storage = server.url;
    pool = new pg.Pool({ connectionString: storage, max: 2 });
    pool.on("error", () => {});
    // This process triggers and reconciles; the attempts run in two worker processes.
    runtime = testRuntime({ ...env, storage }, { flows: [restartFlow], roles: ["coordinator"], logLevel: "error" });
    await runtime.start();
    client = runtime.client();
    for (let i = 0; i < 2; i++) {
      workers.push(
        await spawnWorker(FIXTURE, {
          AX_STORAGE: storage,
          AX_REDIS: env.redis,
          AX_PREFIX: env.prefix,
          AX_LOG_LEVEL: LOG_DIR ? "info" : "warn",
        }),
      );
    }
  });

  afterAll(async () => {
    if (LOG_DIR) for (const w of workers) writeFileSync(join(LOG_DIR, `pg-restart-worker-${w.pid}.log`), w.lines().join("\n"));
    try {
      await Promise.all(workers.map((w) => w.stop()));
      await runtime?.stop();
      await pool?.end();
    } finally {
      // Whatever failed above, the private cluster must not outlive the test.
      await server?.destroy();
      await env.cleanup();
    }
  });

  it("finishes every run once PostgreSQL is back; workers keep retrying their writes and stay up", { timeout: 150_000 }, async () => {
    const t0 = Date.now();
    for (let i = 0; i < RUNS; i += 20) {
      await Promise.all(Array.from({ length: 20 }, (_, j) => client.triggerFlow("pg_restart_order", `order-${i + j}`)));
    }

    // Take the server down mid-flight: some runs done, attempts running.
    for (;;) {
      const done = await tryCount(`select count(*)::int as n from runs where status = 'success'`);
      const running = await tryCount(`select count(*)::int as n from node_runs where status = 'running'`);
      if ((done ?? 0) >= 20 && (running ?? 0) > 0) break;
      if (done === RUNS) throw new Error("every run finished before the restart; make the flow slower");
      await sleep(20);
    }
    const inFlight = await tryCount(`select count(*)::int as n from runs where status in ('pending', 'running')`);
    const downAt = Date.now();
    await server.stop(mode);
    await sleep(OUTAGE_MS);
    await server.start();
    const upAt = Date.now();

    const deadline = Date.now() + 90_000;
    let open: number | undefined = RUNS;
    while (Date.now() < deadline) {
      open = await tryCount(`select count(*)::int as n from runs where status not in ('success', 'failed', 'cancelled')`);
      if (open === 0) break;
      await sleep(250);
    }
    const doneAt = Date.now();
    if (open !== 0) {
      const stuck = await pool.query(
        `select n.run_id, n.node_key, n.status, n.attempt, n.next_retry_at, a.worker, a.started_at, a.finished_at, a.outcome
         from node_runs n join runs r on r.id = n.run_id left join attempts a on a.run_id = n.run_id and a.node_key = n.node_key
         where r.status not in ('success', 'failed', 'cancelled') order by n.run_id, n.node_key, a.n`,
      );
      console.log(`stuck runs (stop at ${new Date(downAt).toISOString()}, start at ${new Date(upAt).toISOString()}):`, stuck.rows);
    }
    expect(open).toBe(0);

    for (const worker of workers) expect(worker.process.exitCode, `worker ${worker.id} exited`).toBeNull();
    const statuses = (await pool.query(`select status, count(*)::int as n from runs group by status`)).rows;
    expect(statuses).toEqual([{ status: "success", n: RUNS }]);
    expect((await pool.query(`select count(*)::int as n from node_runs where status <> 'success'`)).rows[0].n).toBe(0);
    // Not applied twice: one successful attempt per node, every attempt closed.
    expect(
      (await pool.query(`select run_id, node_key from attempts where outcome = 'success' group by 1, 2 having count(*) > 1`)).rows,
    ).toEqual([]);
    expect((await pool.query(`select count(*)::int as n from attempts where finished_at is null`)).rows[0].n).toBe(0);
    // No attempt failed for the outage itself: ax.once's claim waits for PostgreSQL as the runtime's writes do.
    expect((await pool.query(`select count(*)::int as n from attempts where error->>'name' = 'AxStoreError'`)).rows[0].n).toBe(0);
    // fetch_order and price_order run 20-100 ms without touching PostgreSQL: an attempt whose outcome
    // waited out the outage was still 20-100 ms of run time, not the outage's length.
    const { longest } = (
      await pool.query(
        `select coalesce(max(extract(epoch from finished_at - started_at) * 1000), 0)::float8 as longest
         from attempts where outcome = 'success' and node_key in ('fetch_order', 'price_order')`,
      )
    ).rows[0];
    expect(longest).toBeLessThan(OUTAGE_MS / 2);
    const sample = await client.getRun((await pool.query(`select id from runs where payload = '"order-0"'::jsonb`)).rows[0].id);
    expect(sample.tasks.map((t) => t.result)).toEqual(["order-0>fetched", "order-0>fetched>priced", "order-0>fetched>priced>confirmed"]);

    const outcomes = (await pool.query(`select outcome, count(*)::int as n from attempts group by outcome order by outcome`)).rows;
    const warnings = workers.flatMap((w) => w.lines()).filter((line) => line.includes('"level":40') || line.includes('"level":50'));
    console.log(
      [
        `pg-restart (${mode}): ${RUNS} runs (${inFlight} in flight at the stop) finished ${((doneAt - upAt) / 1000).toFixed(1)} s after PostgreSQL was back; ` +
          `outage ${upAt - downAt} ms (stop + ${OUTAGE_MS} ms + start); total ${((doneAt - t0) / 1000).toFixed(1)} s`,
        `attempt outcomes: ${outcomes.map((o) => `${o.outcome}=${o.n}`).join(", ")}; worker warnings/errors logged: ${warnings.length}`,
      ].join("\n"),
    );
  });
});
