import { Writable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import pino from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { ax, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { startAx, startChild, startPrivateRedis, TS_FIXTURE } from "../helpers/processes.js";
import { testRuntime } from "../helpers/runtime.js";
import { until } from "../helpers/until.js";

/** A pino logger whose lines are kept, to wait for what a Runtime reported. */
function capturedLogger() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString("utf8").split("\n").filter(Boolean));
      done();
    },
  });
  return { log: pino({ level: "info" }, stream), lines };
}

describe("Runtime.stop({ timeout }) is bounded", { timeout: 90_000 }, () => {
  const env = isolate("shutdown");
  const runtimes: Runtime[] = [];

  afterAll(async () => {
    await Promise.all(runtimes.map((r) => r.stop({ timeout: 1 }).catch(() => {})));
    await env.cleanup();
  });

  // Attempt 1 ignores its signal for 60 s while holding an `ax.once` (a pool client in the
  // current design); attempt 2 fails once, and later attempts return at once. One retry: the
  // hand-back does not use it up, so the failure of attempt 2 is retried.
  const stubborn = ax.task({ name: "stubborn", retries: 1, retryBackoff: "50ms" }, async (label: string) => {
    const { attempt, runId } = ax.context();
    if (attempt === 1) {
      await ax.once(`hold-${runId}`, () => new Promise((resolve) => setTimeout(resolve, 60_000).unref()));
    }
    if (attempt === 2 && label.startsWith("order")) throw new Error("the invoice API timed out");
    return `${label} on attempt ${attempt}`;
  });
  const stubbornFlow = ax.flow({ name: "stubborn_flow" }, (label) => {
    stubborn(label as never);
  });

  it("returns within 4 s while an inline task ignores its signal, and hands the attempt back for another worker at once", async () => {
    // Leases of a minute: a takeover that waited for one would not finish within this test's bound.
    const longLease = { heartbeatMs: 500, leaseMs: 60_000, lockDurationMs: 60_000, stalledIntervalMs: 30_000 };
    const { log, lines } = capturedLogger();
    const first = testRuntime(env, { flows: [stubbornFlow], roles: ["worker"], worker: longLease, logger: log });
    runtimes.push(first);
    await first.start();
    const runId = await first.client().triggerFlow("stubborn_flow", "order-1");
    await until(
      "attempt 1 running",
      async () => {
        const [row] = await env.sql<{ status: string }>(`select status from node_runs where run_id = $1`, [runId]);
        return row?.status === "running";
      },
      { timeoutMs: 30_000 },
    );

    const second = testRuntime(env, {
      flows: [stubbornFlow],
      worker: longLease,
      reconciler: { intervalMs: 500, staleMs: 60_000, leaseMs: 60_000 },
    });
    runtimes.push(second);
    await second.start();

    const firstWorker = first.workerId;
    const t0 = performance.now();
    await first.stop({ timeout: 2 });
    const stopMs = performance.now() - t0;
    console.log(`stop({ timeout: 2 }) with a task ignoring its signal returned in ${Math.round(stopMs)} ms`);
    expect(stopMs).toBeLessThan(4000);

    const run = await second.client().waitForRun(runId, { timeout: "20s" });
    expect(run.status).toBe("success");
    const [node] = run.tasks;
    expect(node?.result).toBe("order-1 on attempt 3");
    expect(node?.attempts.map((a) => [a.outcome, a.worker])).toEqual([
      ["crashed", firstWorker],
      ["failed", second.workerId],
      ["success", second.workerId],
    ]);
    expect(node?.attempts[0]?.error?.name).toBe("AxWorkerStoppedError");
    // Most workers are stopped by SIGTERM, not stop(): the message names the CLI's flag too.
    expect(node?.attempts[0]?.error?.message).toContain("Give stop() a longer timeout (`ax worker --stop-timeout`)");
    // The timeout as it was given, not what was left of it once the other roles had stopped.
    expect(node?.attempts[0]?.error?.message).toContain("within the stop timeout (2000 ms)");

    // The stopping worker tells it as history does: handed back, not a failure of the task.
    const finished = lines.map((l) => JSON.parse(l) as { msg: string; outcome?: string }).filter((l) => l.outcome);
    expect(finished.map((l) => [l.msg, l.outcome])).toEqual([["attempt handed back: this worker is stopping", "crashed"]]);
    const metrics = await first.registry.metrics();
    expect(metrics).toMatch(/ax_attempts_total\{task="stubborn",outcome="crashed"\} 1/);
    expect(metrics).not.toMatch(/outcome="failed"/);
    expect(metrics).not.toMatch(/ax_task_consecutive_failures\{task="stubborn"\} [1-9]/);
  });

  /** How long `runtime.stop({ timeout })` takes once the Runtime's own Redis was killed and the outage logged. */
  async function stopWithRedisKilled(timeout: number): Promise<number> {
    const redis = await startPrivateRedis();
    const { log, lines } = capturedLogger();
    const runtime = testRuntime({ ...env, redis: redis.url }, { flows: [stubbornFlow], logger: log });
    runtimes.push(runtime);
    try {
      await runtime.start();
      redis.child.process.kill("SIGKILL");
      await redis.child.stop(0);
      await until("the Redis outage in the log", async () => lines.some((l) => l.includes("Redis connection failed")), {
        timeoutMs: 30_000,
      });
      const t0 = performance.now();
      await runtime.stop({ timeout });
      return performance.now() - t0;
    } finally {
      await redis.child.stop(0);
    }
  }

  it("returns within 4 s with Redis stopped", async () => {
    const stopMs = await stopWithRedisKilled(2);
    console.log(`stop({ timeout: 2 }) with Redis down returned in ${Math.round(stopMs)} ms`);
    expect(stopMs).toBeLessThan(4000);
  });

  it("with nothing in flight and Redis gone, does not wait out a long stop timeout", async () => {
    const stopMs = await stopWithRedisKilled(30);
    console.log(`stop({ timeout: 30 }) with Redis down and nothing in flight returned in ${Math.round(stopMs)} ms`);
    // About 3.3 s alone or with two other files; 8.2 s was seen with four files on two cores. The
    // point is that it does not wait out the 30 s.
    expect(stopMs).toBeLessThan(12_000);
  });

  it("the CLI exits within the stop timeout + 5 s of SIGTERM while its Redis is gone, and logs Redis errors instead of ioredis's stderr dump", async () => {
    const redis = await startPrivateRedis();
    const worker = startAx(
      [
        "worker",
        "test/fixtures/hello-flow.ts",
        "--storage",
        env.storage,
        "--redis",
        redis.url,
        "--prefix",
        env.prefix,
        "--stop-timeout",
        "2",
      ],
      { AX_LOG_LEVEL: "info" },
    );
    try {
      await worker.waitFor(/ax worker started/, 80_000);
      expect(worker.output()).toContain(`"prefix":"${env.prefix}"`);
      redis.child.process.kill("SIGKILL");
      await redis.child.stop(0);
      await worker.waitFor(/Redis connection failed/, 20_000);
      const exited = new Promise<number>((resolve) => worker.process.once("exit", () => resolve(performance.now())));
      const t0 = performance.now();
      worker.process.kill("SIGTERM");
      const exitMs = (await Promise.race([exited, sleep(20_000, Number.POSITIVE_INFINITY)])) - t0;
      console.log(`ax worker exited ${Math.round(exitMs)} ms after SIGTERM with Redis down (--stop-timeout 2)`);
      expect(exitMs).toBeLessThan(7000);
      expect(worker.output()).not.toContain("Unhandled error event");
    } finally {
      await worker.stop(0);
      await redis.child.stop(0);
    }
  });

  it("a CLI started against a dead Redis port reports the failure through its logger, not ioredis's stderr dump", async () => {
    const redis = await startPrivateRedis();
    redis.child.process.kill("SIGKILL");
    await redis.child.stop(0);
    const worker = startAx(
      ["worker", "test/fixtures/hello-flow.ts", "--storage", env.storage, "--redis", redis.url, "--prefix", env.prefix],
      {
        AX_LOG_LEVEL: "warn",
      },
    );
    try {
      await worker.waitFor(/Redis connection failed/, 80_000);
      // Several reconnects later, still nothing on stderr from ioredis itself.
      await sleep(1500);
      expect(worker.output()).not.toContain("Unhandled error event");
    } finally {
      await worker.stop(0);
    }
  });
});

describe("a stopped Runtime lets its process exit", { timeout: 60_000 }, () => {
  const env = isolate("stopexit");
  afterAll(() => env.cleanup());

  // ioredis arms a 2 s timer when asked to close a connection that is already closed, and the
  // worker closed its marker connection twice: every stopped worker process lingered 2 s.
  // A Redis connection closed before it was up still waits out ioredis's 2 s for its socket:
  // a Client that never used Redis, a start that failed early. Those get 3 s; hanging is the defect.
  it.each([
    ["worker", undefined, undefined, 1000],
    ["coordinator,worker,api", undefined, undefined, 1000],
    ["client", undefined, undefined, 3000],
    // A start that fails (PostgreSQL unreachable) says so and releases what it opened.
    ["worker", "postgres://postgres@127.0.0.1:1/test", "AxStoreError", 3000],
  ])("with roles %s, soon after stop() (or a Client's close(), or a failed start)", async (roles, storage, failed, withinMs) => {
    const child = startChild(process.execPath, [...TS_FIXTURE, "test/fixtures/stop-exit.ts"], {
      AX_STORAGE: storage ?? env.storage,
      AX_REDIS: env.redis,
      AX_PREFIX: env.prefix,
      AX_ROLES: roles,
    });
    await child.waitFor(/exitMsAfterStop/, 45_000);
    const report = JSON.parse(/\{"exitMsAfterStop".*\}/.exec(child.output())![0]) as { exitMsAfterStop: number; failed?: string };
    await child.stop(0);
    expect(report.failed).toBe(failed);
    expect(report.exitMsAfterStop).toBeLessThan(withinMs);
  });
});
