import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, type Runtime } from "ax-scheduler";
import { openStore, registerSchedules, type Store } from "@ax/store";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

const noop = ax.task({ name: "rolling_noop" }, () => ax.context().logicalDate);
/** Even seconds in this process's code. */
const flow = ax.flow({ name: "rolling_schedule", schedule: "*/2 * * * * *", overlap: "allow" }, () => noop());

describe("a schedule another coordinator stored anew (a rolling deploy with a changed cron)", { timeout: 60_000 }, () => {
  const env = isolate("rolling");
  let runtime: Runtime;
  let store: Store;

  beforeAll(async () => {
    runtime = testRuntime(env, { flows: [flow] });
    await runtime.start();
    store = openStore({ url: env.storage });
  });

  afterAll(async () => {
    await store?.close();
    await runtime?.stop({ timeout: 1 });
    await env.cleanup();
  });

  const ticks = () =>
    env.sql<{ at: Date; run_id: string | null }>(
      "select logical_date as at, run_id from schedule_ticks where flow = $1 order by logical_date",
      [flow.name],
    );

  it("is the only one that fires: this coordinator stops firing its old cron and fires the stored one", async () => {
    while ((await ticks()).length === 0) await sleep(100);
    // What a coordinator started with newer code does: store its schedule, odd seconds.
    const changedAt = Date.now();
    await registerSchedules(
      store.db,
      [flow.name],
      [{ flow: flow.name, cron: "1-59/2 * * * * *", timezone: "UTC", overlap: "allow", catchUp: "none", maxCatchUp: 1 }],
    );
    await sleep(7000);
    const after = (await ticks()).filter((t) => t.at.getTime() > changedAt + 200);
    const even = after.filter((t) => t.at.getUTCSeconds() % 2 === 0);
    const odd = after.filter((t) => t.at.getUTCSeconds() % 2 === 1);
    expect(
      even.map((t) => t.at.toISOString()),
      "ticks of the old cron",
    ).toEqual([]);
    expect(odd.length, "ticks of the stored cron").toBeGreaterThanOrEqual(2);
    expect(odd.every((t) => t.run_id !== null)).toBe(true);
  });
});
