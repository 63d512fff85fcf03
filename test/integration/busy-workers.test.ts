import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, type Client, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";
import { untilMatches } from "../helpers/until.js";

let release: () => void = () => undefined;
const gate = new Promise<void>((resolve) => {
  release = resolve;
});

const slow = ax.task({ name: "slot_holder" }, async () => {
  await gate;
  return "done";
});
const slowFlow = ax.flow({ name: "busy_workers_flow" }, () => slow());

describe("a node waiting because every worker slot is taken (the thread pool is full)", () => {
  const env = isolate("busyslots");
  let runtime: Runtime;
  let client: Client;

  beforeAll(async () => {
    runtime = testRuntime(env, { flows: [slowFlow], roles: ["coordinator", "worker", "api"], port: 0, maxConcurrency: 2 });
    await runtime.start();
    client = runtime.client();
  });

  afterAll(async () => {
    release();
    await runtime?.stop();
    await env.cleanup();
  });

  it("says so in waitingFor, ax queues and /api/workers, and stops saying it once a slot frees", async () => {
    const first = await client.triggerFlows("busy_workers_flow", [1, 2]);
    const third = await client.triggerFlow("busy_workers_flow", 3);
    await untilMatches(
      "both slots taken",
      async () => (await Promise.all(first.map((id) => client.getRun(id)))).map((r) => r.tasks[0]!.status),
      (statuses) => statuses.every((s) => s === "running"),
    );
    // The lease renewal carries the worker's slots; its first one may predate the start.
    const waiting = await untilMatches(
      "the third run to say why it waits",
      async () => (await client.getRun(third)).tasks[0]!,
      (task) => task.waitingFor !== null,
    );
    expect(waiting).toMatchObject({ status: "queued", waitingFor: "worker slots 2/2 (1 worker)" });

    const [queue] = await client.listQueues();
    expect(queue).toMatchObject({
      name: "default.slot_holder",
      waiting: 1,
      workers: 1,
      slots: { running: 2, capacity: 2 },
      limited: "worker slots 2/2 (1 worker)",
    });
    const workers = (await (await fetch(`${runtime.url}/api/workers`)).json()) as { workers: { running: number; concurrency: number }[] };
    expect(workers.workers).toEqual([expect.objectContaining({ running: 2, concurrency: 2 })]);

    release();
    const done = await client.waitForRun(third, { timeout: "15s" });
    expect(done.status).toBe("success");
    expect(done.tasks[0]!.waitingFor).toBeNull();
  });
});
