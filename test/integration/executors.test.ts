import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AttemptInfo, Client, RunInfo, Runtime } from "ax-scheduler";
import { jsExecutorFlows } from "../fixtures/executor-js-tasks.mjs";
import { executorFlows } from "../fixtures/executor-tasks.js";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";
import { until } from "../helpers/until.js";

const KINDS = ["thread", "process"] as const;

function durationMs(attempt: AttemptInfo): number {
  return Date.parse(attempt.finishedAt!) - Date.parse(attempt.startedAt);
}

const waitFor = (what: string, check: () => Promise<boolean>, timeoutMs = 30_000) => until(what, check, { timeoutMs, everyMs: 50 });

/** Fails if a thread of this process keeps spinning: that would burn ~1 s of CPU per second. */
async function expectNoSpinningThread(): Promise<void> {
  const before = process.cpuUsage();
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const used = process.cpuUsage(before);
  expect((used.user + used.system) / 1000).toBeLessThan(600);
}

function onlyAttempt(run: RunInfo): AttemptInfo {
  expect(run.tasks).toHaveLength(1);
  return run.tasks[0]!.attempts.at(-1)!;
}

describe("thread and process executors on real Redis and PostgreSQL", () => {
  const env = isolate("exec");
  let runtime: Runtime;
  let client: Client;

  const run = async (flow: string, payload: unknown = { n: 21 }, options: { businessKey?: string } = {}) =>
    client.waitForRun(await client.triggerFlow(flow, payload, options), { timeout: "50s" });

  /** The kind's idle child for the fixture module is warm after this, as on a worker in steady state. */
  const warmAndCheck = async (kind: string) => expect((await run(`echo_${kind}`)).status).toBe("success");

  beforeAll(async () => {
    runtime = testRuntime(env, { flows: [...executorFlows, ...jsExecutorFlows], maxConcurrency: 4 });
    await runtime.start();
    client = runtime.client();
  });

  afterAll(async () => {
    await runtime?.stop();
    await env.cleanup();
  });

  it("documents what memoryMb caps on each executor", () => {
    const options = readFileSync(new URL("../../docs/options.md", import.meta.url), "utf8");
    const limits = options.slice(options.indexOf("### Resource limits"));
    expect(limits).toMatch(/\*\*`process`\*\*: `memoryMb` caps \*\*all\*\* the child's memory/);
    expect(limits).toMatch(/\*\*`thread`\*\*: `memoryMb` caps the thread's \*\*JavaScript heap only\*\*/);
  });

  it.each(["inline", ...KINDS])(
    "stores a %s task's result as JSON.stringify writes it: undefined fields left out, toJSON applied",
    async (kind) => {
      const done = await run(`shaped_${kind}`);
      expect(done.status).toBe("success");
      expect(done.tasks[0]!.result).toEqual({ id: 7, price: { amount: 19.99, currency: "EUR" }, tags: ["a", null] });
    },
  );

  it.each(KINDS)("loads a JavaScript task module in a %s child without tsx's hooks", async (kind) => {
    const plain = await run(`plain_js_${kind}`);
    expect(plain.status).toBe("success");
    expect(plain.tasks[0]!.result).toMatchObject({ typescriptHooks: false });
  });

  for (const kind of KINDS) {
    describe(kind, () => {
      it("returns the task's result, run off the main thread or process, with ax.context() values", async () => {
        const done = await run(`echo_${kind}`, { n: 21 }, { businessKey: "order-7" });
        expect(done.status).toBe("success");
        const result = done.tasks[0]!.result as Record<string, unknown>;
        expect(result).toMatchObject({
          doubled: 42,
          context: {
            runId: done.id,
            flow: `echo_${kind}`,
            task: `echo_${kind}`,
            nodeKey: `echo_${kind}`,
            attempt: 1,
            idempotencyKey: `${done.id}:echo_${kind}`,
            businessKey: "order-7",
            signalAborted: false,
            hasLog: true,
          },
        });
        if (kind === "thread") expect(result).toMatchObject({ pid: process.pid, isMainThread: false });
        else expect(result.pid).not.toBe(process.pid);
      });

      it("stops a loop that ignores its signal at timeout: 1, and the same worker keeps serving", async () => {
        await warmAndCheck(kind);
        const done = await run(`spin_${kind}`);
        expect(done.status).toBe("failed");
        const attempt = onlyAttempt(done);
        expect(attempt.outcome).toBe("timed_out");
        expect(attempt.error?.name).toBe("AxTimeoutError");
        expect(attempt.worker).toBe(runtime.workerId);
        const took = durationMs(attempt);
        console.log(`${kind} spin timed out: attempt startedAt -> finishedAt ${took} ms`);
        expect(took).toBeGreaterThanOrEqual(1000);
        // Ended promptly by its 1 s timer; the bound leaves room for a loaded host (2,029 ms once in CI).
        expect(took).toBeLessThan(4000);

        const spinner = done.tasks[0]!.progress as { pid: number };
        if (kind === "process") expect(() => process.kill(spinner.pid, 0)).toThrow(/ESRCH/);
        else await expectNoSpinningThread();

        const after = await run(`echo_${kind}`);
        expect(after.status).toBe("success");
        expect(onlyAttempt(after).worker).toBe(runtime.workerId);
      });

      it("a result that arrives after the timeout is a timeout, even when this process was too busy to see the timer first", async () => {
        await warmAndCheck(kind);
        const runId = await client.triggerFlow(`nap_${kind}`, null);
        await waitFor("the attempt to start", async () => (await client.getRun(runId)).tasks[0]?.status === "running");
        // An inline task (here, the test) holding the worker's event loop past the child's whole run:
        // the child's answer and the timeout's timer come due together.
        const until = Date.now() + 2500;
        while (Date.now() < until) {}
        const done = await client.waitForRun(runId, { timeout: "10s" });
        expect(onlyAttempt(done)).toMatchObject({ outcome: "timed_out", error: { name: "AxTimeoutError" } });
        expect(done.tasks[0]!.result).toBeNull();
      });

      it("cancel stops a running attempt that ignores its signal", async () => {
        await warmAndCheck(kind);
        const runId = await client.triggerFlow(`hang_${kind}`, null);
        await waitFor("the task to spin", async () => (await client.getRun(runId)).tasks[0]?.progress != null);
        const t0 = Date.now();
        expect((await client.cancel(runId)).cancelled).toBe(true);
        const done = await client.waitForRun(runId, { timeout: "10s" });
        expect(done.status).toBe("cancelled");
        expect(onlyAttempt(done).error?.name).toBe("AxCancelledError");
        // The attempt is closed by the cancel itself; wait for the executor to have stopped the child.
        const spinner = done.tasks[0]!.progress as { pid: number };
        if (kind === "process") {
          await waitFor(
            "the child process to be killed",
            async () => {
              try {
                process.kill(spinner.pid, 0);
                return false;
              } catch {
                return true;
              }
            },
            2000,
          );
        } else await expectNoSpinningThread();
        console.log(`${kind} cancel stopped the spinning child within ${Date.now() - t0} ms`);
        await warmAndCheck(kind);
      });

      it("fails an attempt that allocates past resources.memoryMb with a resource error; the worker survives", async () => {
        const done = await run(`hog_${kind}`);
        expect(done.status).toBe("failed");
        const attempt = onlyAttempt(done);
        expect(attempt.outcome).toBe("failed");
        expect(attempt.error?.name).toBe("AxResourceLimitError");
        expect(attempt.error?.message).toMatch(/out of memory.*64 MB/);
        const [stored] = await env.sql<{ kind: string }>(`select error->>'kind' as kind from attempts where run_id = $1`, [done.id]);
        expect(stored?.kind).toBe("resource");
        await warmAndCheck(kind);
      });

      if (kind === "process") {
        it("counts Buffers against resources.memoryMb: over the limit the child is stopped, under it the task succeeds", async () => {
          const over = await run("buffers_process", { mb: 400 });
          expect(over.status).toBe("failed");
          const attempt = onlyAttempt(over);
          expect(attempt.error?.name).toBe("AxResourceLimitError");
          expect(attempt.error?.message).toMatch(/used \d+ MB .* over its 128 MB limit .*Raise resources\.memoryMb/);
          const used = Number(/used (\d+) MB/.exec(attempt.error!.message)![1]);
          expect(used).toBeGreaterThan(128);
          expect(used).toBeLessThan(400);
          const [stored] = await env.sql<{ kind: string }>(`select error->>'kind' as kind from attempts where run_id = $1`, [over.id]);
          expect(stored?.kind).toBe("resource");

          const under = await run("buffers_process", { mb: 48 });
          expect(under.status).toBe("success");
          expect(under.tasks[0]!.result).toBe(48);
        });
      }

      it("stops a task past resources.cpuSeconds", async () => {
        await warmAndCheck(kind);
        const done = await run(`burn_${kind}`);
        const attempt = onlyAttempt(done);
        expect(attempt.outcome).toBe("failed");
        expect(attempt.error?.name).toBe("AxResourceLimitError");
        expect(attempt.error?.message).toMatch(/CPU time/);
        const took = durationMs(attempt);
        console.log(`${kind} burn stopped at cpuSeconds 1: attempt took ${took} ms`);
        expect(took).toBeGreaterThanOrEqual(1000);
        await warmAndCheck(kind);
      });

      it("retries by error class across the boundary: retryOn matches, anything else fails at once", async () => {
        const flaky = await run(`flaky_${kind}`);
        expect(flaky.status).toBe("success");
        expect(flaky.tasks[0]!.result).toBe("ok on attempt 3");
        expect(flaky.tasks[0]!.attempts.map((a) => [a.outcome, a.error?.name ?? null])).toEqual([
          ["failed", "FlakyApiError"],
          ["failed", "FlakyApiError"],
          ["success", null],
        ]);
        expect(flaky.tasks[0]!.attempts[0]!.error?.stack).toMatch(/executor-tasks\.ts/);

        const misconfigured = await run(`misconfigured_${kind}`);
        expect(misconfigured.status).toBe("failed");
        expect(misconfigured.tasks[0]!.attempts.map((a) => [a.outcome, a.error?.name])).toEqual([["failed", "ConfigError"]]);
      });

      it("relays heartbeat() to the parent: heartbeatTimeout 1 s survives a 2.5 s task", async () => {
        const done = await run(`beat_${kind}`);
        expect(done.status).toBe("success");
        expect(done.tasks[0]!.result).toBeGreaterThanOrEqual(10);
        expect(done.tasks[0]!.progress).toMatchObject({ beats: expect.any(Number) });
      });
    });
  }
});
