import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, type AxEvent, type Client, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

class NoisyError extends Error {
  override name = "NoisyError";
}
class BlockingError extends Error {
  override name = "BlockingError";
}
// The notify_only node fails at once; the blocking one a little later: its failure is the run's.
const noisy = ax.task({ name: "acc_noisy", onFailure: "notify_only" }, async () => {
  throw new NoisyError("only worth a notice");
});
const blocking = ax.task({ name: "acc_blocking" }, async () => {
  await new Promise((resolve) => setTimeout(resolve, 150));
  throw new BlockingError("this one fails the run");
});
const after = ax.task({ name: "acc_after" }, async (_upstream: null) => "never");
const mixedFailures = ax.flow({ name: "acc_mixed_failures" }, () => {
  after(noisy());
  after(blocking());
});

let thrownStrings = 0;
const throwsString = ax.task({ name: "acc_throws_string", retries: 1, retryBackoff: "10ms", retryOn: ["NonErrorThrown"] }, async () => {
  thrownStrings += 1;
  throw "a plain string";
});
const stringFlow = ax.flow({ name: "acc_string_flow" }, () => {
  throwsString();
});

describe("failure events and matchers name what ax shows", () => {
  const env = isolate("evacc");
  let runtime: Runtime;
  let client: Client;
  const seen: AxEvent[] = [];
  let unsubscribe: () => void;

  beforeAll(async () => {
    unsubscribe = ax.onEvent((event) => {
      seen.push(event);
    });
    runtime = testRuntime(env, { flows: [mixedFailures, stringFlow], maxConcurrency: 20 });
    await runtime.start();
    client = runtime.client();
  }, 60_000);

  afterAll(async () => {
    unsubscribe?.();
    await runtime?.stop();
    await env.cleanup();
  });

  it("run_failed names the node that failed the run, not a notify_only node that failed first", async () => {
    const runId = await client.triggerFlow("acc_mixed_failures", null);
    const run = await client.waitForRun(runId, { timeout: "30s" });
    expect(run.status).toBe("failed");
    const noisyNode = run.tasks.find((t) => t.key === "acc_noisy");
    const blockingNode = run.tasks.find((t) => t.key === "acc_blocking");
    expect(noisyNode?.status).toBe("failed");
    expect(blockingNode?.status).toBe("failed");
    expect(Date.parse(noisyNode?.finishedAt ?? "")).toBeLessThan(Date.parse(blockingNode?.finishedAt ?? ""));
    // Each failed node says whether the run's outcome ignores it.
    expect(Object.keys(noisyNode?.error ?? {}).sort()).toEqual(["message", "name", "notRetried", "notifyOnly", "stack"]);
    expect([noisyNode?.error?.notifyOnly, blockingNode?.error?.notifyOnly]).toEqual([true, false]);
    await expect.poll(() => seen.find((e) => e.runId === runId && e.name === "run_failed"), { timeout: 10_000 }).toBeDefined();
    const failed = seen.filter((e) => e.runId === runId && e.name === "run_failed");
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ nodeKey: "acc_blocking", error: { name: "BlockingError", message: "this one fails the run" } });
  });

  it('retryOn: ["NonErrorThrown"] matches a thrown string on the inline executor, as ax shows its name', async () => {
    const runId = await client.triggerFlow("acc_string_flow", null);
    const run = await client.waitForRun(runId, { timeout: "30s" });
    const node = run.tasks[0];
    expect(node?.attempts.map((a) => a.error?.name)).toEqual(["NonErrorThrown", "NonErrorThrown"]);
    expect(node?.attempts[0]?.error?.stack).toBeNull();
    expect(node?.error?.notRetried).toMatch(/no retries left/);
    expect(thrownStrings).toBe(2);
  });
});
