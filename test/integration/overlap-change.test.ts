import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

/** 2.5 s of work on a 1 s schedule: with `overlap: queue` the next tick waits, buffered. */
const slow = ax.task({ name: "overlap_change_slow" }, async () => {
  await sleep(2500);
  return ax.context().logicalDate;
});
const flow = ax.flow({ name: "overlap_change", schedule: "* * * * * *", overlap: "queue" }, () => slow());

describe("a tick buffered by overlap: queue when the overlap changes", { timeout: 60_000 }, () => {
  const env = isolate("overlapchange");
  let runtime: Runtime;

  beforeAll(async () => {
    runtime = testRuntime(env, { flows: [flow] });
    await runtime.start();
  });

  afterAll(async () => {
    await runtime?.stop({ timeout: 1 });
    await env.cleanup();
  });

  const buffered = () =>
    env.sql<{ at: Date }>(
      "select logical_date as at from schedule_ticks where flow = 'overlap_change' and status = 'queued' and run_id is null",
    );

  it("still gets its run when the earlier run ends, under the new overlap", async () => {
    let waiting = await buffered();
    for (const deadline = Date.now() + 10_000; waiting.length === 0 && Date.now() < deadline; ) {
      await sleep(100);
      waiting = await buffered();
    }
    expect(waiting).toHaveLength(1);
    const applied = await runtime.client().config.apply("flows:\n  overlap_change: { overlap: skip }\n", "runtime.yaml", "ops");
    while (runtime.configVersion !== applied.version) await sleep(20);

    const at = waiting[0]!.at;
    let run: { id: string; created_at: Date } | undefined;
    for (const deadline = Date.now() + 10_000; !run && Date.now() < deadline; ) {
      await sleep(100);
      [run] = await env.sql<{ id: string; created_at: Date }>(
        "select r.id, r.created_at from schedule_ticks t join runs r on r.id = t.run_id where t.flow = 'overlap_change' and t.logical_date = $1",
        [at],
      );
    }
    expect(run, "the buffered tick's run").toBeDefined();
    // Made when the run it waited for ended (2.5 s of work), not minutes later.
    expect(run!.created_at.getTime() - at.getTime()).toBeLessThan(5000);
  });
});
