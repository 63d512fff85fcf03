import { afterAll, describe, expect, it } from "vitest";
import { ax, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

// Two deploys of one flow: the second adds a node whose task only its code defines.
const first = ax.task({ name: "rollback_first" }, (n: number) => n + 1);
const added = ax.task({ name: "rollback_added" }, (n: number) => n * 10);
const before = ax.flow({ name: "rollback_flow" }, (n) => {
  first(n);
});
const after = ax.flow({ name: "rollback_flow" }, (n) => {
  added(first(n));
});

describe("rolling a flow's code back", () => {
  const env = isolate("rollback");
  const started: Runtime[] = [];

  afterAll(async () => {
    await Promise.all(started.map((r) => r.stop({ timeout: "2s" })));
    await env.cleanup();
  });

  /** Starts a Runtime with `flow`, runs one run and stops: a deploy of that code. */
  async function deploy(flow: typeof before) {
    const runtime = testRuntime(env, { flows: [flow] });
    started.push(runtime);
    await runtime.start();
    const run = await runtime.client().waitForRun(await runtime.client().triggerFlow("rollback_flow", 1), { timeout: "20s" });
    await runtime.stop({ timeout: "2s" });
    return run;
  }

  it("gives new runs the graph of the code deployed last, an older version included", async () => {
    const v1 = await deploy(before);
    expect([v1.flowVersion, v1.status, v1.tasks.map((t) => t.key)]).toEqual([1, "success", ["rollback_first"]]);
    const v2 = await deploy(after);
    expect([v2.flowVersion, v2.status, v2.tasks.length]).toEqual([2, "success", 2]);
    // Until 0.9.7 the highest version stayed current: this run got v2's graph and waited for a
    // worker defining rollback_added, which no process running the old code has.
    const back = await deploy(before);
    expect([back.flowVersion, back.status, back.tasks.map((t) => t.key)]).toEqual([1, "success", ["rollback_first"]]);
    const again = await deploy(after);
    expect([again.flowVersion, again.status]).toEqual([2, "success"]);
  });
});
