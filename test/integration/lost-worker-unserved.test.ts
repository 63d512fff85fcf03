import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import { ax, type AxEvent, type Client, type Runtime } from "ax-scheduler";
import { napFlow } from "../fixtures/signal-worker.js";
import { isolate, type Isolated } from "../helpers/isolated.js";
import { spawnWorker, type WorkerProcess } from "../helpers/processes.js";
import { testRuntime } from "../helpers/runtime.js";
import { untilMatches } from "../helpers/until.js";

const FIXTURE = "test/fixtures/signal-worker.ts";
const GRACE_MS = 3000;

/** Another team's task, on a worker that stays up: the cluster has live workers, none for signal_nap. */
const other = ax.task({ name: "lost_other" }, () => "other");
const otherFlow = ax.flow({ name: "lost_other_flow" }, () => {
  other();
});

describe("the only worker of a queue killed mid-attempt, none restarted", () => {
  const envs: Isolated[] = [];
  const runtimes: Runtime[] = [];
  const workers: WorkerProcess[] = [];

  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    for (const runtime of runtimes.splice(0).reverse()) await runtime.stop();
    await Promise.all(envs.splice(0).map((env) => env.cleanup()));
  });

  const started = async (runtime: Runtime) => {
    runtimes.push(runtime);
    await runtime.start();
    return runtime;
  };

  /** A coordinator, the nap worker in its own process, and a run whose nap is running there when the process is killed. */
  async function killedMidAttempt(
    label: string,
  ): Promise<{ env: Isolated; client: Client; runId: string; victim: WorkerProcess; killedAt: number }> {
    const env = isolate(label);
    envs.push(env);
    const coordinator = await started(
      testRuntime(env, {
        flows: [napFlow],
        roles: ["coordinator"],
        reconciler: { intervalMs: 500, staleMs: 1000, leaseMs: 3000, unknownTaskGraceMs: GRACE_MS },
      }),
    );
    const client = coordinator.client();
    const victim = await spawnWorker(FIXTURE, { AX_STORAGE: env.storage, AX_REDIS: env.redis, AX_PREFIX: env.prefix });
    workers.push(victim);
    const runId = await client.triggerFlow("signal_nap_flow", 600_000);
    await untilMatches(
      "the nap to start",
      () => client.getRun(runId),
      (run) => run.tasks[0]?.status === "running",
      { timeoutMs: 30_000 },
    );
    await victim.kill9();
    return { env, client, runId, victim, killedAt: Date.now() };
  }

  it("fails the node once the grace has passed with other workers alive: attempt crashed, alerts told", { timeout: 90_000 }, async () => {
    const events: AxEvent[] = [];
    const unsubscribe = ax.onEvent((event) => {
      events.push(event);
    });
    try {
      const { env, client, runId, victim, killedAt } = await killedMidAttempt("lostunserved");
      // Timed from the kill: on a loaded machine this start alone can take a good part of the grace.
      await started(testRuntime(env, { flows: [otherFlow], roles: ["worker"] }));
      const run = await client.waitForRun(runId, { timeout: "60s" });
      const tookMs = Date.now() - killedAt;
      console.log(`node failed ${tookMs} ms after its worker was killed (grace ${GRACE_MS} ms past the worker's last heartbeat)`);
      expect(run.status).toBe("failed");
      const node = run.tasks[0]!;
      expect(node.status).toBe("failed");
      expect(node.attempts.map((a) => [a.n, a.outcome, a.worker])).toEqual([[1, "crashed", victim.id]]);
      expect(node.error).toMatchObject({ name: "AxWorkerCrashedError" });
      expect(node.error!.message).toContain(`worker ${victim.id} stopped heartbeating during attempt 1`);
      expect(node.error!.message).toContain('no live worker has served task "signal_nap" in queue "default"');
      expect(node.error!.message).toContain("ax worker --queues default");
      expect(tookMs).toBeGreaterThanOrEqual(GRACE_MS - 1000);
      await untilMatches(
        "task_failed and run_failed",
        async () => events.filter((e) => e.runId === runId && (e.name === "task_failed" || e.name === "run_failed")),
        (found) => found.length === 2,
        { timeoutMs: 10_000 },
      );
      expect(events.filter((e) => e.runId === runId && (e.name === "task_failed" || e.name === "run_failed"))).toMatchObject([
        { name: "task_failed", task: "signal_nap", attempt: 1, error: { name: "AxWorkerCrashedError" } },
        { name: "run_failed", nodeKey: node.key, error: { name: "AxWorkerCrashedError" } },
      ]);
    } finally {
      unsubscribe();
    }
  });

  it("with no worker alive at all, waits past the grace for one; the next worker of the queue closes the attempt", {
    timeout: 90_000,
  }, async () => {
    const { env, client, runId, victim } = await killedMidAttempt("lostfleet");
    // The lease (5 s) and the grace both over, with room for a few reconciler passes.
    await sleep(5000 + GRACE_MS + 2000);
    const waiting = await client.getRun(runId);
    expect(waiting.status).toBe("running");
    expect(waiting.tasks[0]!.status).toBe("running");
    const returning = await started(testRuntime(env, { flows: [napFlow], roles: ["worker"] }));
    // The worker that came back closes the attempt as crashed and starts the next one, though
    // signal_nap has no retries: its worker died, the task did not fail.
    const run = await untilMatches(
      "the second attempt",
      () => client.getRun(runId),
      (r) => r.tasks[0]!.attempts.length === 2,
      { timeoutMs: 60_000 },
    );
    const node = run.tasks[0]!;
    expect(node.attempts.map((a) => [a.n, a.outcome, a.worker])).toEqual([
      [1, "crashed", victim.id],
      [2, null, returning.workerId],
    ]);
    expect(node.attempts[0]!.error).toMatchObject({ name: "AxWorkerCrashedError" });
    expect(node.attempts[0]!.error!.message).toContain("the attempt is presumed crashed");
    expect(run.status).toBe("running");
    await returning.stop({ timeout: 1 });
  });
});
