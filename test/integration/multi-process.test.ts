import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Client, RunInfo, Runtime } from "ax-scheduler";
import { diamondEffects } from "../fixtures/diamond-effects.js";
import { isolate } from "../helpers/isolated.js";
import { startAx, type Child } from "../helpers/processes.js";
import { testRuntime } from "../helpers/runtime.js";
import { SideEffects } from "../helpers/side-effects.js";

const RUNS = 200;
const NODES = 4;

describe("two worker processes started with the CLI share one cluster", () => {
  const env = isolate("multiproc");
  const effects = new SideEffects(env.storage);
  const workers: Child[] = [];
  let coordinator: Runtime;
  let client: Client;

  beforeAll(async () => {
    const args = ["worker", "test/fixtures/diamond-effects.ts", "--storage", env.storage, "--prefix", env.prefix, "--concurrency", "20"];
    for (let i = 0; i < 2; i++) workers.push(startAx(args, { DATABASE_URL: env.storage, AX_LOG_LEVEL: "info" }));
    // While the workers boot: this process only triggers and reconciles (migrations are serialised by a lock).
    coordinator = testRuntime(env, {
      flows: [diamondEffects],
      roles: ["coordinator"],
      // A safety net only: a backlog of 800 attempts is normal here, re-adding its jobs every pass would be churn.
      reconciler: { intervalMs: 1000, staleMs: 20_000, leaseMs: 10_000 },
    });
    await coordinator.start();
    client = coordinator.client();
    await effects.init();
    await Promise.all(workers.map((w) => w.waitFor(/ax worker started/, 50_000)));
  }, 60_000);

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await coordinator?.stop();
    await effects.close();
    await env.cleanup();
  });

  it(`runs ${RUNS} diamonds triggered at once, each node exactly once, on both workers`, async () => {
    const runIds = await Promise.all(Array.from({ length: RUNS }, (_, i) => client.triggerFlow("diamond_effects", i)));
    const finished: RunInfo[] = [];
    // Sequential waits: the first absorbs the wall time, the rest are mostly already done.
    for (const id of runIds) finished.push(await client.waitForRun(id, { timeout: "45s" }));

    const notSuccess = finished
      .filter((r) => r.status !== "success")
      .map(
        (r) =>
          `${r.id} ${r.status}: ${r.tasks
            .filter((t) => t.error)
            .map((t) => `${t.key} ${t.error!.name}: ${t.error!.message}`)
            .join("; ")}`,
      );
    expect(notSuccess).toEqual([]);
    for (const run of finished) {
      expect(run.tasks.map((t) => t.result)).toEqual([
        run.payload,
        (run.payload as number) + 1,
        (run.payload as number) + 2,
        2 * (run.payload as number) + 3,
      ]);
    }
    expect(await effects.countsNotOne(NODES, runIds)).toEqual([]);

    const attempts = finished.flatMap((r) => r.tasks.flatMap((t) => t.attempts));
    expect(attempts).toHaveLength(RUNS * NODES);
    expect(attempts.every((a) => a.outcome === "success" && a.n === 1)).toBe(true);
    const perWorker = new Map<string, number>();
    for (const a of attempts) perWorker.set(a.worker, (perWorker.get(a.worker) ?? 0) + 1);
    expect(perWorker.size).toBe(2);
    // Worker ids embed the pid: the attempts ran in the two child processes, not in this one.
    const pids = [...perWorker.keys()].map((id) => Number(/-(\d+)-[0-9a-f]+$/.exec(id)?.[1])).sort();
    expect(pids).toEqual(workers.map((w) => w.process.pid).sort());
    // Generous for a machine shared with other test suites; about 15 s when it is not.
  }, 90_000);
});
