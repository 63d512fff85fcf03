import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, type Client, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

const step = ax.task({ name: "order_step", concurrency: { max: 1, key: "order" } }, async (_event: { order: string; i: number }) => {
  await sleep(300);
  return "done";
});
const orderEvents = ax.flow({ name: "order_events" }, (event) => {
  step(event);
});

describe("a key's line is first come, first served across worker processes", () => {
  const env = isolate("keyorder");
  let a: Runtime;
  let b: Runtime;
  let client: Client;

  beforeAll(async () => {
    a = testRuntime(env, { flows: [orderEvents], maxConcurrency: 10 });
    b = testRuntime(env, { flows: [orderEvents], maxConcurrency: 10, roles: ["worker"] });
    await a.start();
    await b.start();
    client = a.client();
  });

  afterAll(async () => {
    await Promise.all([a?.stop({ timeout: 1 }), b?.stop({ timeout: 1 })]);
    await env.cleanup();
  });

  it("events of one order triggered one after another start in trigger order", async () => {
    for (const order of ["o-1", "o-2"]) {
      const runIds: string[] = [];
      for (let i = 0; i < 8; i++) {
        runIds.push(await client.triggerFlow("order_events", { order, i }));
        await sleep(40);
      }
      for (const id of runIds) expect((await client.waitForRun(id, { timeout: "30s" })).status).toBe("success");
      const starts = await env.sql<{ run_id: string; worker: string }>(
        "select run_id, worker from attempts where run_id = any($1::uuid[]) order by started_at",
        [runIds],
      );
      // Until 0.8.0 a waiter woken from the line went to the back of the task's queue, and a run
      // triggered after it that the other process fetched first took the key ahead of it.
      expect(starts.map((s) => runIds.indexOf(s.run_id))).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    }
  }, 60_000);
});
