import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, type Client, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { maxOverlap } from "../helpers/overlap.js";
import { testRuntime } from "../helpers/runtime.js";

const slow = ax.task({ name: "slow_step" }, async (n: number) => {
  await sleep(400);
  return n;
});
const after = ax.task({ name: "after_step" }, (n: number) => n + 1);
const capped = ax.flow({ name: "capped", maxConcurrentRuns: 2 }, (input) => {
  after(slow(input));
});

describe("maxConcurrentRuns", { timeout: 60_000 }, () => {
  const env = isolate("maxruns");
  let runtime: Runtime;
  let client: Client;

  beforeAll(async () => {
    runtime = testRuntime(env, { flows: [capped] });
    await runtime.start();
    client = runtime.client();
  });

  afterAll(async () => {
    await client?.close();
    await runtime?.stop();
    await env.cleanup();
  });

  it("6 manual triggers with a cap of 2: never more than 2 running, the rest wait pending visibly and start in trigger order", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push(await client.triggerFlow("capped", i));
    const last = await client.getRun(ids[5]!);
    expect(last.status).toBe("pending");
    expect(last.waitingFor).toMatch(/^maxConcurrentRuns [0-9]\/2$/);
    expect(last.tasks.find((t) => t.key === "slow_step")!.waitingFor).toBe(last.waitingFor);
    expect(last.tasks.find((t) => t.key === "after_step")!.waitingFor).toBeNull();
    const runs = await Promise.all(ids.map((id) => client.waitForRun(id, { timeout: 45_000 })));
    expect(runs.map((r) => r.status)).toEqual(Array(6).fill("success"));
    expect(runs.every((r) => r.waitingFor === null)).toBe(true);
    expect(maxOverlap(runs.map((r) => ({ start: r.startedAt!, end: r.finishedAt! })))).toBeLessThanOrEqual(2);
    // Two runs released together may start in either order; a run two places later never starts first.
    const starts = runs.map((r) => new Date(r.startedAt!).getTime());
    for (let i = 0; i + 2 < starts.length; i++) expect(starts[i + 2]!).toBeGreaterThanOrEqual(starts[i]!);
  });

  it("a delayed run takes no slot before it is due: runs triggered after it start at once, and it starts when due", async () => {
    // Two of them would fill the cap of 2 if they counted.
    const [delayed, second] = await client.triggerFlows("capped", [100, 102], { delay: "2s" });
    const waiting = await client.getRun(delayed!);
    expect(waiting.status).toBe("pending");
    expect(waiting.waitingFor).toBe(`due at ${waiting.runAt}`);
    const now = await client.waitForRun(await client.triggerFlow("capped", 101), { timeout: "10s" });
    expect(now.status).toBe("success");
    expect(Date.parse(now.finishedAt!)).toBeLessThan(Date.parse(waiting.runAt!));
    const run = await client.waitForRun(delayed!, { timeout: "20s" });
    expect(run.status).toBe("success");
    expect((await client.waitForRun(second!, { timeout: "20s" })).status).toBe("success");
    // Admitted by the coordinator's first pass after it is due (every 250 ms).
    const late = Date.parse(run.startedAt!) - Date.parse(waiting.runAt!);
    expect(late).toBeGreaterThanOrEqual(-50);
    expect(late).toBeLessThan(3000);
  });
});
