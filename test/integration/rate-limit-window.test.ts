import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, type Client, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

const WINDOW_MS = 6000;
const push = ax.task({ name: "push_row", rateLimit: { max: 1, per: `${WINDOW_MS}ms` } }, (_row: number) => "pushed");
const pushFlow = ax.flow({ name: "push_row" }, (row) => {
  push(row);
});

describe("a task limited to one start per window", { timeout: 60_000 }, () => {
  const env = isolate("ratewindow");
  let runtime: Runtime;
  let client: Client;

  beforeAll(async () => {
    runtime = testRuntime(env, { flows: [pushFlow] });
    await runtime.start();
    client = runtime.client();
  });

  afterAll(async () => {
    await runtime?.stop({ timeout: 1 });
    await env.cleanup();
  });

  it("starts its first run at once after the worker starts, and the next says why it waits for the whole window", async () => {
    const [first, second] = await client.triggerFlows("push_row", [1, 2]);
    // Until 0.8.0 the worker's first fetches, all at once, each took the window's only slot in turn:
    // the one that found the queue empty gave it back, but the others stayed blocked for the window.
    expect((await client.waitForRun(first!, { timeout: "3s" })).status).toBe("success");
    const reasons: (string | null)[] = [];
    for (let waited = 0; waited < WINDOW_MS - 1500; waited += 500) {
      reasons.push((await client.getRun(second!)).tasks[0]!.waitingFor);
      await sleep(500);
    }
    expect(new Set(reasons)).toEqual(new Set([`rate limit 1 per ${WINDOW_MS / 1000}s`]));
    expect((await client.waitForRun(second!, { timeout: "10s" })).status).toBe("success");
  });
});
