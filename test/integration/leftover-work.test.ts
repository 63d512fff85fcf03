import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, type Client, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

/** What the work a task left running saw, by label: the error name or message ax.context()/ax.once() threw, or what they gave. */
const seen = new Map<string, { context: string; once: string }>();
let onceCalls = 0;

const errorOf = (error: unknown) => `${(error as Error).name}: ${(error as Error).message}`;

const leaky = ax.task({ name: "leftover_leaky" }, (label: string) => {
  setTimeout(async () => {
    let context: string;
    let once: string;
    try {
      context = ax.context().runId;
    } catch (error) {
      context = errorOf(error);
    }
    try {
      once = String(await ax.once(`leftover-${label}`, () => ++onceCalls));
    } catch (error) {
      once = errorOf(error);
    }
    seen.set(label, { context, once });
  }, 200);
  return "returned";
});
const long = ax.task({ name: "leftover_long" }, async () => {
  await sleep(1500);
  return "long";
});
const leakyFlow = ax.flow({ name: "leftover_leaky_flow" }, (label) => leaky(label));
const longFlow = ax.flow({ name: "leftover_long_flow" }, () => long());

describe("work a task function leaves running after it settled", () => {
  const env = isolate("leftover");
  let runtime: Runtime;
  let client: Client;

  beforeAll(async () => {
    runtime = testRuntime(env, { flows: [leakyFlow, longFlow], maxConcurrency: 4 });
    await runtime.start();
    client = runtime.client();
  });

  afterAll(async () => {
    await runtime?.stop();
    await env.cleanup();
  });

  async function leftoverOf(label: string) {
    const run = await client.waitForRun(await client.triggerFlow("leftover_leaky_flow", label), { timeout: "30s" });
    expect(run.status).toBe("success");
    for (let deadline = Date.now() + 5000; !seen.has(label) && Date.now() < deadline; ) await sleep(20);
    return seen.get(label);
  }

  it("gets AxDefinitionError from ax.context() and ax.once() when no other task runs", async () => {
    expect(await leftoverOf("alone")).toEqual({
      context: expect.stringMatching(/^AxDefinitionError: /),
      once: expect.stringMatching(/^AxDefinitionError: /),
    });
    expect(onceCalls).toBe(0);
  });

  it("gets AxDefinitionError saying the attempt ended while another task is running in the process", async () => {
    const other = await client.triggerFlow("leftover_long_flow", {});
    for (let deadline = Date.now() + 10_000; (await client.getRun(other)).status !== "running" && Date.now() < deadline; ) await sleep(20);
    const ended = expect.stringMatching(/^AxDefinitionError: ax\.context\(\) or ax\.once\(\) was called after its attempt already ended/);
    expect(await leftoverOf("beside")).toEqual({ context: ended, once: ended });
    expect((await client.getRun(other)).status).toBe("running");
    expect(onceCalls).toBe(0);
    expect((await client.waitForRun(other, { timeout: "30s" })).status).toBe("success");
  });
});
