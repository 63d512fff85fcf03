import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, type Client, type Runtime } from "ax-scheduler";
import { migrate, openStore, retryAttempt, startAttempts, type Store } from "@ax/store";
import { isolate } from "../helpers/isolated.js";
import { lostReplyProxy, type LostReplyProxy } from "../helpers/lost-reply-proxy.js";
import { testRuntime } from "../helpers/runtime.js";

let calls = 0;
const step = ax.task({ name: "fence_step", retries: 0 }, () => {
  calls += 1;
  return "ran";
});
const fenceFlow = ax.flow({ name: "fence" }, () => {
  step();
});

const start = (runId: string, attempt: number) => ({ runId, nodeKey: "fence_step", attempt, upstreamKeys: [] });

describe("the start fence, called directly on real PostgreSQL", () => {
  const env = isolate("fence");
  let runtime: Runtime;
  let client: Client;
  let store: Store;

  beforeAll(async () => {
    // No worker: the test plays the workers' part through the store.
    runtime = testRuntime(env, { flows: [fenceFlow], roles: ["coordinator"] });
    await runtime.start();
    client = runtime.client();
    store = openStore({ url: env.storage });
    await migrate(store);
  });

  afterAll(async () => {
    await store?.close();
    await runtime?.stop();
    await env.cleanup();
  });

  it("answers by attempt: a stale job for attempt 1 and the live job for attempt 2 in one batch start only attempt 2", async () => {
    const runId = await client.triggerFlow("fence", null);
    const [first] = await startAttempts(store.db, "worker-a", [start(runId, 1)]);
    expect(first).toBeDefined();
    const failure = { name: "Error", message: "first attempt failed", stack: null, kind: "error" as const };
    expect(
      await retryAttempt(store.db, { runId, nodeKey: "fence_step", attempt: 1, outcome: "failed", error: failure, delayMs: 0 }),
    ).toBeInstanceOf(Date);

    const answers = await startAttempts(store.db, "worker-b", [start(runId, 1), start(runId, 2)]);
    expect(answers[0]).toBeUndefined();
    expect(answers[1]).toBeDefined();
    const tries = await env.sql<{ n: number; worker: string }>("select n, worker from attempts where run_id = $1 order by n", [runId]);
    expect(tries).toEqual([
      { n: 1, worker: "worker-a" },
      { n: 2, worker: "worker-b" },
    ]);
  });

  it("answers a start retried by the worker that committed it as started again when asked to resume, and nobody else", async () => {
    const runId = await client.triggerFlow("fence", null);
    const [committed] = await startAttempts(store.db, "worker-a", [start(runId, 1)]);
    expect(committed).toBeDefined();

    // A plain start does not look for the worker's own attempt: the fence asks again with `resume`.
    const [plain] = await startAttempts(store.db, "worker-a", [start(runId, 1)]);
    expect(plain).toBeUndefined();
    const [retried] = await startAttempts(store.db, "worker-a", [{ ...start(runId, 1), resume: true }]);
    expect(retried).toEqual({ ...committed, runStarted: false });
    const [other] = await startAttempts(store.db, "worker-b", [{ ...start(runId, 1), resume: true }]);
    expect(other).toBeUndefined();
    const tries = await env.sql("select n, worker from attempts where run_id = $1", [runId]);
    expect(tries).toEqual([{ n: 1, worker: "worker-a" }]);
  });
});

describe("a start whose reply is lost after it committed", () => {
  const env = isolate("lostreply");
  let proxy: LostReplyProxy;
  let runtime: Runtime;

  beforeAll(async () => {
    proxy = await lostReplyProxy(env.storage, "update node_runs n set status = 'running'");
    runtime = testRuntime({ ...env, storage: proxy.via(env.storage) }, { flows: [fenceFlow] });
    await runtime.start();
  });

  afterAll(async () => {
    await runtime?.stop();
    await proxy?.close();
    await env.cleanup();
  });

  it("is retried and the attempt runs once and succeeds, with retries: 0", async () => {
    calls = 0;
    const client = runtime.client();
    const run = await client.waitForRun(await client.triggerFlow("fence", null), { timeout: "30s" });
    expect(proxy.dropped).toBe(1);
    expect(run.status).toBe("success");
    const node = run.tasks[0]!;
    expect(node.result).toBe("ran");
    expect(node.attempts.map((a) => [a.n, a.outcome])).toEqual([[1, "success"]]);
    expect(calls).toBe(1);
  });
});
