import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { AxRunNotFoundError, ax, type Client, type RunInfo, type Runtime } from "ax-scheduler";
import { cancelRunRecords, handBackAttempts, openStore } from "@ax/store";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";
import { until } from "../helpers/until.js";

/** What the tasks saw, by run id: the test process runs the worker, so memory is the witness. */
const seen = new Map<
  string,
  { started: number; abortedWith?: string; abortedAt?: number; listenerSaw?: string; returned?: boolean; ranAfter?: boolean }
>();
const entry = (runId: string) => {
  const e = seen.get(runId) ?? { started: 0 };
  seen.set(runId, e);
  return e;
};

/** Sleeps until its signal aborts (or 60 s), recording the abort's reason. */
const sleeper = ax.task({ name: "sleeper", retries: 2, retryBackoff: "50ms" }, async () => {
  const { runId, signal } = ax.context();
  const e = entry(runId);
  e.started += 1;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, 60_000);
    signal.addEventListener("abort", () => {
      // A cancel arrives from outside the attempt (a Redis message): the listener still has its context.
      e.listenerSaw = `${ax.context().runId}/${ax.context().nodeKey}`;
      e.abortedWith = (signal.reason as Error)?.name;
      e.abortedAt = Date.now();
      clearTimeout(timer);
      resolve();
    });
  });
  e.returned = true;
  return "woke up";
});
/** Always fails with a long backoff: it sits `retrying` with a delayed job. */
const flaky = ax.task({ name: "flaky", retries: 3, retryBackoff: 60 }, (): string => {
  throw new Error("upstream API is down");
});
/** Routed to a queue no worker serves: its job stays waiting. */
const parked = ax.task({ name: "parked", queue: "parked" }, () => "never runs");
const after = ax.task({ name: "after" }, (s: string) => {
  entry(ax.context().runId).ranAfter = true;
  return s;
});
const quick = ax.task({ name: "quick" }, (n: number) => n * 2);

const cancellable = ax.flow({ name: "cancellable" }, () => {
  const s = sleeper();
  flaky();
  parked();
  after(s);
});
const short = ax.flow({ name: "short" }, (input) => {
  quick(input);
});
const add = ax.task({ name: "add" }, async (...values: number[]) => {
  await sleep(Math.random() * 5);
  return values.reduce((a, b) => a + b, 0);
});
const busy = ax.flow({ name: "busy" }, (input) => {
  const a = quick(input);
  const leaves = Array.from({ length: 5 }, (_, i) => add(a, i));
  add(...leaves);
});

const waitFor = (what: string, check: () => Promise<boolean> | boolean, timeoutMs = 15_000) =>
  until(what, check, { timeoutMs, everyMs: 20 });

const byKey = (run: RunInfo) => Object.fromEntries(run.tasks.map((t) => [t.key, t]));

describe("cancel(runId)", () => {
  const env = isolate("cancel");
  let runtime: Runtime;
  let client: Client;
  let redis: Redis;

  /** Jobs of this run still in Redis, by state. */
  async function jobsOf(runId: string): Promise<string[]> {
    const found: string[] = [];
    // Each task has its own queue (`group.task`).
    for (const name of ["default.sleeper", "default.flaky", "parked.parked", "default.after", "default.quick", "default.add"]) {
      const queue = new Queue(name, { connection: redis, prefix: env.prefix });
      for (const job of await queue.getJobs(["waiting", "delayed", "prioritized", "paused", "active"])) {
        if (job?.data?.runId === runId) found.push(`${name}:${job.id}:${await job.getState()}`);
      }
      await queue.close();
    }
    return found;
  }

  beforeAll(async () => {
    runtime = testRuntime(env, {
      flows: [cancellable, short, busy],
      queues: ["default"],
      maxConcurrency: 4,
      roles: ["coordinator", "worker", "api"],
      port: 0,
    });
    await runtime.start();
    client = runtime.client();
    redis = new Redis(env.redis, { maxRetriesPerRequest: null });
  });

  afterAll(async () => {
    redis?.disconnect();
    await runtime?.stop();
    await env.cleanup();
  });

  it("cancels a run with a sleeping node: aborts its signal, removes queued and delayed jobs, runs nothing downstream", async () => {
    const runId = await client.triggerFlow("cancellable", null);
    await waitFor("sleeper running, flaky retrying, parked queued", async () => {
      const t = byKey(await client.getRun(runId));
      return (
        t.sleeper?.status === "running" && t.flaky?.status === "retrying" && t.parked?.status === "queued" && entry(runId).started === 1
      );
    });
    const before = await jobsOf(runId);
    expect(before.some((j) => j.startsWith("parked.parked:") && j.endsWith(":waiting"))).toBe(true);
    expect(before.some((j) => j.includes(".flaky.2:delayed"))).toBe(true);

    const t0 = Date.now();
    const result = await client.cancel(runId);
    expect(result).toEqual({ runId, cancelled: true, status: "cancelled", removedJobs: 2 });
    // Only the sleeper's own job may remain, while its aborted attempt unwinds (it may also be
    // gone between listing and reading its state: "unknown").
    expect((await jobsOf(runId)).filter((j) => !j.endsWith(":active") && !j.endsWith(":unknown"))).toEqual([]);

    const run = await client.waitForRun(runId, { timeout: "2s" });
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(run.status).toBe("cancelled");
    // Cancelling again repeats the Redis half; no job is left to remove, and none is counted.
    expect(await client.cancel(runId)).toEqual({ runId, cancelled: false, status: "cancelled", removedJobs: 0 });
    expect(run.finishedAt).not.toBeNull();
    const t = byKey(run);
    expect(Object.values(t).map((n) => n.status)).toEqual(["cancelled", "cancelled", "cancelled", "cancelled"]);
    expect(t.sleeper!.attempts).toHaveLength(1);
    expect(t.sleeper!.attempts[0]).toMatchObject({ outcome: "failed", error: { name: "AxCancelledError" } });
    expect(t.sleeper!.attempts[0]!.finishedAt).not.toBeNull();
    expect(t.sleeper!.error?.name).toBe("AxCancelledError");
    // The retrying node keeps the error of its last real attempt.
    expect(t.flaky!.error?.message).toBe("upstream API is down");
    expect(t.flaky!.nextRetryAt).toBeNull();
    expect(t.parked!.attempts).toHaveLength(0);
    expect(t.after!.attempts).toHaveLength(0);

    await waitFor("the sleeping task to see its signal abort", () => entry(runId).returned === true, 3000);
    expect(entry(runId).abortedWith).toBe("AxCancelledError");
    expect(entry(runId).listenerSaw).toBe(`${runId}/sleeper`);
    expect(entry(runId).abortedAt! - t0).toBeLessThan(1000);

    // The aborted attempt's late end (it returned "woke up", and sleeper has retries) changed nothing.
    await waitFor("the aborted attempt to leave the worker", async () => (await jobsOf(runId)).length === 0);
    const later = await client.getRun(runId);
    expect(later).toEqual(run);
    expect(entry(runId).started).toBe(1);
    expect(entry(runId).ranAfter).toBeUndefined();
    const [counts] = await env.sql<{ remaining: number; open: number }>(
      `select (select nodes_remaining from runs where id = $1) as remaining,
              (select count(*)::int from attempts where run_id = $1 and finished_at is null) as open`,
      [runId],
    );
    expect(counts).toEqual({ remaining: 0, open: 0 });
  });

  it("leaves a finished run unchanged", async () => {
    const runId = await client.triggerFlow("short", 21);
    const done = await client.waitForRun(runId, { timeout: "10s" });
    expect(done.status).toBe("success");
    expect(await client.cancel(runId)).toEqual({ runId, cancelled: false, status: "success", removedJobs: 0 });
    expect(await client.getRun(runId)).toEqual(done);
  });

  it("a second cancel of a cancelled run reports it, changing nothing", async () => {
    const runId = await client.triggerFlow("cancellable", null);
    await waitFor("sleeper running", async () => byKey(await client.getRun(runId)).sleeper?.status === "running");
    expect((await client.cancel(runId)).cancelled).toBe(true);
    const run = await client.getRun(runId);
    expect(await client.cancel(runId)).toMatchObject({ cancelled: false, status: "cancelled" });
    expect(await client.getRun(runId)).toEqual(run);
  });

  it("aborts a running attempt even when the cancel message is missed (the worker's sweep asks PostgreSQL)", async () => {
    const runId = await client.triggerFlow("cancellable", null);
    await waitFor(
      "sleeper running",
      async () => byKey(await client.getRun(runId)).sleeper?.status === "running" && entry(runId).started === 1,
    );
    // Cancel in PostgreSQL only: no pub/sub message is sent.
    const store = openStore({ url: env.storage, poolSize: 1 });
    const t0 = Date.now();
    try {
      const outcome = await cancelRunRecords(store.db, runId, {
        name: "AxCancelledError",
        message: "cancelled by the test",
        stack: null,
        kind: "error",
      });
      expect(outcome).toMatchObject({ found: true, cancelled: true });
    } finally {
      await store.close();
    }
    await waitFor("the sweep to abort the sleeper", () => entry(runId).abortedWith !== undefined, 5000);
    expect(entry(runId).abortedWith).toBe("AxCancelledError");
    // Heartbeat (and sweep) every 500 ms in the test runtime; a loaded machine took 1.76 s. Without
    // the sweep nothing would abort it within the 5 s waited above.
    expect(Date.now() - t0).toBeLessThan(3000);
  });

  it("aborts an attempt taken over while its worker missed its lease, so it does not run beside its successor", async () => {
    const runId = await client.triggerFlow("cancellable", null);
    await waitFor(
      "sleeper running",
      async () => byKey(await client.getRun(runId)).sleeper?.status === "running" && entry(runId).started === 1,
    );
    // What a takeover writes (the fence of a redelivered job, or the reconciler) once the lease lapsed.
    const [attempt] = await env.sql<{ worker: string }>("select worker from attempts where run_id = $1 and node_key = 'sleeper'", [runId]);
    const store = openStore({ url: env.storage, poolSize: 1 });
    try {
      const requeued = await handBackAttempts(store.db, attempt!.worker, [{ runId, nodeKey: "sleeper", attempt: 1 }], {
        name: "AxWorkerLostError",
        message: "taken over by the test",
        stack: null,
        kind: "error",
      });
      expect(requeued).toHaveLength(1);
    } finally {
      await store.close();
    }
    await waitFor("the sweep to abort the sleeper", () => entry(runId).abortedWith !== undefined, 5000);
    expect(entry(runId).abortedWith).toBe("AxAttemptTakenOverError");
    const sleeper = byKey(await client.getRun(runId)).sleeper!;
    expect(sleeper.attempts[0]).toMatchObject({ n: 1, outcome: "crashed", error: { name: "AxWorkerLostError" } });
    await client.cancel(runId);
  });

  it("is exposed as POST /api/runs/:id/cancel", async () => {
    const runId = await client.triggerFlow("cancellable", null);
    await waitFor("sleeper running", async () => byKey(await client.getRun(runId)).sleeper?.status === "running");
    const response = await fetch(`${runtime.url}/api/runs/${runId}/cancel`, { method: "POST" });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ runId, cancelled: true, status: "cancelled" });
    expect((await client.getRun(runId)).status).toBe("cancelled");
    const missing = await fetch(`${runtime.url}/api/runs/${randomUUID()}/cancel`, { method: "POST" });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: "AxRunNotFoundError" });
  });

  it("is exposed as `ax cancel <id>`", async () => {
    const runId = await client.triggerFlow("cancellable", null);
    await waitFor("sleeper running", async () => byKey(await client.getRun(runId)).sleeper?.status === "running");
    const bin = fileURLToPath(new URL("../../packages/cli/bin/ax.js", import.meta.url));
    const flags = ["--storage", env.storage, "--redis", env.redis, "--prefix", env.prefix];
    const { stdout } = await promisify(execFile)(process.execPath, [bin, ...flags, "cancel", runId, "--json"]);
    // The CLI's start-up can starve this process long enough for the sleeper's job to stall back
    // to waiting, so it may be removed too: at least the parked and delayed jobs are.
    const printed = JSON.parse(stdout) as { removedJobs: number };
    expect(printed).toMatchObject({ runId, cancelled: true, status: "cancelled" });
    expect(printed.removedJobs).toBeGreaterThanOrEqual(2);
    expect((await client.getRun(runId)).status).toBe("cancelled");
  });

  it("cancels racing completions: every run ends consistent, nothing advances after its cancel", async () => {
    const runIds = await Promise.all(Array.from({ length: 40 }, (_, i) => client.triggerFlow("busy", i)));
    const results = await Promise.all(
      runIds.map(async (id) => {
        await sleep(Math.random() * 40);
        return client.cancel(id);
      }),
    );
    expect(results.every((r) => (r.cancelled && r.status === "cancelled") || (!r.cancelled && r.status === "success"))).toBe(true);
    await waitFor("every job of these runs to leave Redis", async () => {
      for (const id of runIds) if ((await jobsOf(id)).length > 0) return false;
      return true;
    });
    const bad = await env.sql<{ id: string; problem: string }>(
      `select r.id::text, 'run ' || r.status || ' with node ' || n.node_key || ' ' || n.status as problem
         from runs r join node_runs n on n.run_id = r.id
        where r.flow = 'busy'
          and (r.status not in ('success', 'cancelled')
            or r.nodes_remaining <> 0
            or (r.status = 'success' and n.status <> 'success')
            or (r.status = 'cancelled' and n.status not in ('success', 'cancelled'))
            or (r.status = 'cancelled' and n.status = 'success' and n.finished_at > r.finished_at))
       union all
       select a.run_id::text, 'open attempt ' || a.node_key from attempts a join runs r on r.id = a.run_id
        where r.flow = 'busy' and a.finished_at is null`,
    );
    expect(bad).toEqual([]);
    const cancelled = results.filter((r) => r.cancelled).length;
    expect(cancelled).toBeGreaterThan(0);
  });

  it("refuses an unknown run id", async () => {
    await expect(client.cancel(randomUUID())).rejects.toBeInstanceOf(AxRunNotFoundError);
    await expect(client.cancel("not-a-run-id")).rejects.toBeInstanceOf(AxRunNotFoundError);
  });
});
