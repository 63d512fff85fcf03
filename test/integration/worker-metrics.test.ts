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

describe("ax_task_consecutive_failures", () => {
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
    runtime = testRuntime(env, { flows: [pushFlow], roles: ["coordinator", "worker", "api"], port: 0, metricsAuth: false });
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
});
