import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, type Client, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

/** Fails every attempt when asked to, after using up its retries; succeeds otherwise. */
const push = ax.task({ name: "push_report", retries: 3, retryBackoff: "20ms", jitter: 0 }, (input: { fail: boolean }) => {
  if (input.fail) throw new Error("upstream 502");
  return "pushed";
});
const pushFlow = ax.flow({ name: "push_flow" }, (input) => {
  push(input);
});

let hanging: () => void = () => {};
/** Runs until its run is cancelled. */
const hang = ax.task({ name: "hang_report" }, async () => {
  hanging();
  await new Promise((resolve) => ax.context().signal.addEventListener("abort", resolve));
  throw ax.context().signal.reason;
});
const hangFlow = ax.flow({ name: "hang_flow" }, () => {
  hang();
});

describe("worker metrics: ax_task_consecutive_failures, cancelled attempts", () => {
  const env = isolate("wmetrics");
  let runtime: Runtime;
  let client: Client;

  const gauge = async () => {
    const text = await (await fetch(`${runtime.url}/metrics`)).text();
    const value = /^ax_task_consecutive_failures\{task="push_report"\} (\d+)$/m.exec(text)?.[1];
    return value === undefined ? undefined : Number(value);
  };
  const run = async (fail: boolean) =>
    (await client.waitForRun(await client.triggerFlow("push_flow", { fail }), { timeout: "20s" })).status;

  beforeAll(async () => {
    runtime = testRuntime(env, { flows: [pushFlow, hangFlow], roles: ["coordinator", "worker", "api"], port: 0, metricsAuth: false });
    await runtime.start();
    client = runtime.client();
  });

  afterAll(async () => {
    await runtime?.stop();
    await env.cleanup();
  });

  it("counts final failures, not the retries before them, and a success resets it", async () => {
    for (let i = 0; i < 3; i++) expect(await run(true)).toBe("failed");
    // 3 runs of 4 attempts each: the alert's consecutive_failures counts 3, and so does the gauge.
    expect(await gauge()).toBe(3);
    expect(await run(false)).toBe("success");
    expect(await gauge()).toBe(0);
    expect(await run(true)).toBe("failed");
    expect(await gauge()).toBe(1);
  });

  it("counts an attempt its run's cancel aborted as cancelled, not failed", async () => {
    const started = new Promise<void>((resolve) => {
      hanging = resolve;
    });
    const runId = await client.triggerFlow("hang_flow", null);
    await started;
    await client.cancel(runId);
    expect((await client.waitForRun(runId, { timeout: "20s" })).status).toBe("cancelled");
    const counted = async () => {
      const text = await (await fetch(`${runtime.url}/metrics`)).text();
      return [...text.matchAll(/^ax_attempts_total\{task="hang_report",outcome="(\w+)"\} (\d+)$/gm)].map((m) => [m[1], Number(m[2])]);
    };
    // The worker counts it once the aborted function has returned, a moment after the cancel.
    for (let i = 0; i < 100 && (await counted()).length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await counted()).toEqual([["cancelled", 1]]);
  });
});
