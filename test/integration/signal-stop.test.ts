import { once } from "node:events";
import { readdir, readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Client, Runtime } from "ax-scheduler";
import { napProcessFlow } from "../fixtures/signal-process-task.js";
import { napFlow } from "../fixtures/signal-worker.js";
import { isolate } from "../helpers/isolated.js";
import { spawnWorker } from "../helpers/processes.js";
import { testRuntime } from "../helpers/runtime.js";

describe("a Runtime embedded in a service stops on SIGTERM by itself", { timeout: 60_000 }, () => {
  const env = isolate("signalstop");
  let coordinator: Runtime;
  let client: Client;

  beforeAll(async () => {
    coordinator = testRuntime(env, { flows: [napFlow, napProcessFlow], roles: ["coordinator"] });
    await coordinator.start();
    client = coordinator.client();
  });

  /** Until the run's node has started in the worker. */
  const untilRunning = async (runId: string) => {
    while ((await client.getRun(runId)).tasks[0]?.status !== "running") await new Promise((resolve) => setTimeout(resolve, 50));
  };

  /**
   * Until the worker has forked the attempt's child and the child has left the worker's process
   * group: a group signal sent while the fork is under way (the node already marked running) would
   * reach the child before it is on its own.
   */
  const untilDetachedChild = async (workerPid: number) => {
    for (;;) {
      for (const entry of await readdir("/proc")) {
        const stat = await readFile(`/proc/${entry}/stat`, "utf8").catch(() => "");
        // Fields after the command's closing parenthesis: state, ppid, pgrp.
        const [, ppid, pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        if (Number(ppid) === workerPid && Number(pgrp) === Number(entry)) return;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  afterAll(async () => {
    await client?.close();
    await coordinator?.stop();
    await env.cleanup();
  });

  it("lets the running attempt finish, then ends the process as the signal would have", async () => {
    const worker = await spawnWorker("test/fixtures/signal-worker.ts", {
      AX_STORAGE: env.storage,
      AX_REDIS: env.redis,
      AX_PREFIX: env.prefix,
    });
    const runId = await client.triggerFlow("signal_nap_flow", 1500);
    await untilRunning(runId);
    const exited = once(worker.process, "exit");
    worker.process.kill("SIGTERM");
    const [code, signal] = await exited;
    // Without ax's handler Node would have exited at once and the attempt, with no retries, failed as crashed.
    expect({ code, signal }).toEqual({ code: null, signal: "SIGTERM" });
    expect(worker.output()).toMatch(/SIGTERM: stopping the Runtime/);
    const run = await client.getRun(runId);
    expect(run.status).toBe("success");
    expect(run.tasks[0]!.attempts).toHaveLength(1);
    expect(run.tasks[0]!.attempts[0]!.outcome).toBe("success");
  });

  it("lets a process-executor attempt finish when Ctrl-C signals the worker's whole process group", async () => {
    const worker = await spawnWorker(
      "test/fixtures/signal-worker.ts",
      { AX_STORAGE: env.storage, AX_REDIS: env.redis, AX_PREFIX: env.prefix },
      60_000,
      true,
    );
    const runId = await client.triggerFlow("signal_nap_process_flow", 2000);
    await untilRunning(runId);
    await untilDetachedChild(worker.pid);
    const exited = once(worker.process, "exit");
    // The group, as a terminal's Ctrl-C or systemd's control-group stop: the executor's child gets it too.
    process.kill(-worker.pid, "SIGINT");
    const [code, signal] = await exited;
    expect({ code, signal }).toEqual({ code: null, signal: "SIGINT" });
    const run = await client.getRun(runId);
    expect(run.tasks[0]!.attempts.map((a) => [a.outcome, a.error?.message ?? null])).toEqual([["success", null]]);
    expect(run.status).toBe("success");
  });

  it("hands back an attempt still running after the Runtime's stopTimeout, and ends then", async () => {
    const worker = await spawnWorker("test/fixtures/signal-worker.ts", {
      AX_STORAGE: env.storage,
      AX_REDIS: env.redis,
      AX_PREFIX: env.prefix,
      AX_STOP_TIMEOUT: "1s",
    });
    const runId = await client.triggerFlow("signal_nap_flow", 20_000);
    await untilRunning(runId);
    const exited = once(worker.process, "exit");
    const signalledAt = Date.now();
    worker.process.kill("SIGTERM");
    await exited;
    const tookMs = Date.now() - signalledAt;
    expect(tookMs).toBeLessThan(10_000);
    const attempts = (await client.getRun(runId)).tasks[0]!.attempts;
    expect(attempts[0]).toMatchObject({ n: 1, outcome: "crashed", error: { name: "AxWorkerStoppedError" } });
    await client.cancel(runId);
  });

  it("leaves the exit to a service that handles the signal itself, even with process.once", async () => {
    const env2 = { AX_STORAGE: env.storage, AX_REDIS: env.redis, AX_PREFIX: env.prefix, AX_SERVICE_HANDLER: "once" };
    const worker = await spawnWorker("test/fixtures/signal-worker.ts", env2);
    const exited = once(worker.process, "exit");
    worker.process.kill("SIGTERM");
    const [code, signal] = await exited;
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(worker.output()).toMatch(/service cleaned up/);
  });
});
