import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, describe, expect, it } from "vitest";
import { ax, type Runtime } from "ax-scheduler";
import { describeSchedules, OVERDUE_AFTER_MS } from "@ax/coordinator";
import { openStore, type Store } from "@ax/store";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

const beat = ax.task({ name: "overdue_beat" }, () => null);
const everySecond = ax.flow({ name: "overdue_flow", schedule: "* * * * * *", overlap: "allow" }, () => {
  beat();
});

describe("a schedule no coordinator ticks says it is overdue", () => {
  const env = isolate("overdue");
  const runtimes: Runtime[] = [];
  let store: Store | undefined;

  afterAll(async () => {
    await Promise.all(runtimes.map((r) => r.stop({ timeout: 1 })));
    await store?.close();
    await env.cleanup();
  });

  /** The flow's schedule as it will read `aheadMs` from now. */
  async function seen(aheadMs: number) {
    store ??= openStore({ url: env.storage });
    const [schedule] = await describeSchedules(store.db, new Date(Date.now() + aheadMs));
    return schedule!;
  }

  it("overdue once its coordinator is gone; not while one ticks it; not while paused", async () => {
    const first = testRuntime(env, { flows: [everySecond], roles: ["coordinator"] });
    await first.start();
    await sleep(1500);
    await first.stop({ timeout: 1 });
    const stoppedAt = Date.now();
    // Nothing ticks it now: a minute and a half on, it is overdue since the first fire time after its last tick.
    const late = await seen(OVERDUE_AFTER_MS + 30_000);
    expect(late.overdueSince).not.toBeNull();
    expect(late.overdueSince!.getTime()).toBe(late.lastTick!.logicalDate.getTime() + 1000);
    expect(late.overdueSince!.getTime()).toBeLessThanOrEqual(stoppedAt + 1000);
    // Fire times from before the schedule was stored or resumed are not owed.
    expect((await seen(0)).overdueSince).toBeNull();

    const coordinator = testRuntime(env, { flows: [everySecond], roles: ["coordinator"] });
    runtimes.push(coordinator);
    await coordinator.start();
    await sleep(2500);
    // The fire time owed a minute before "now + 59 s" is one just ticked.
    expect((await seen(OVERDUE_AFTER_MS - 1000)).overdueSince).toBeNull();

    const client = coordinator.client();
    await client.pauseSchedule("overdue_flow");
    expect((await seen(OVERDUE_AFTER_MS + 30_000)).overdueSince).toBeNull();
    await client.close();
  }, 60_000);
});
