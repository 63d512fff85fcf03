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
/** Scheduled by configuration only: removing it there leaves no schedule at all. */
const removable = ax.flow({ name: "overlap_removed" }, () => slow());

describe("a tick buffered by overlap: queue when the overlap changes", { timeout: 60_000 }, () => {
  const env = isolate("overlapchange");
  let runtime: Runtime;

  beforeAll(async () => {
    runtime = testRuntime(env, { flows: [flow, removable] });
    await runtime.start();
  });

  afterAll(async () => {
    await runtime?.stop({ timeout: 1 });
    await env.cleanup();
  });

  const buffered = (name = "overlap_change") =>
    env.sql<{ at: Date }>("select logical_date as at from schedule_ticks where flow = $1 and status = 'queued' and run_id is null", [name]);

  const runOfTick = async (name: string, at: Date) => {
    let run: { id: string; created_at: Date } | undefined;
    for (const deadline = Date.now() + 10_000; !run && Date.now() < deadline; ) {
      await sleep(100);
      [run] = await env.sql<{ id: string; created_at: Date }>(
        "select r.id, r.created_at from schedule_ticks t join runs r on r.id = t.run_id where t.flow = $1 and t.logical_date = $2",
        [name, at],
      );
    }
    return run;
  };

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
    const run = await runOfTick("overlap_change", at);
    expect(run, "the buffered tick's run").toBeDefined();
    // Made when the run it waited for ended (2.5 s of work), not minutes later.
    expect(run!.created_at.getTime() - at.getTime()).toBeLessThan(5000);
  });

  it("still gets its run when the earlier run ends after its schedule was removed", async () => {
    const scheduled = await runtime
      .client()
      .config.apply(
        'flows:\n  overlap_change: { overlap: skip }\n  overlap_removed: { schedule: "* * * * * *", overlap: queue }\n',
        "runtime.yaml",
        "ops",
      );
    while (runtime.configVersion !== scheduled.version) await sleep(20);
    let waiting = await buffered("overlap_removed");
    for (const deadline = Date.now() + 10_000; waiting.length === 0 && Date.now() < deadline; ) {
      await sleep(100);
      waiting = await buffered("overlap_removed");
    }
    expect(waiting).toHaveLength(1);
    const removed = await runtime.client().config.apply("flows:\n  overlap_change: { overlap: skip }\n", "runtime.yaml", "ops");
    while (runtime.configVersion !== removed.version) await sleep(20);

    // Before, it stayed queued with no run until the schedule came back, then ran on its old date.
    const run = await runOfTick("overlap_removed", waiting[0]!.at);
    expect(run, "the buffered tick's run").toBeDefined();
    expect(run!.created_at.getTime() - waiting[0]!.at.getTime()).toBeLessThan(5000);
  });
});
