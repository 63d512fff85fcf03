import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, type Client, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

// Ticks once a year under either cron, so never during the test.
const yearTick = ax.task({ name: "live_year_tick" }, () => "ticked");
const yearly = ax.flow({ name: "live_yearly", schedule: { cron: "0 0 1 1 *", timezone: "UTC" } }, () => {
  yearTick();
});
const unscheduled = ax.flow({ name: "live_unscheduled" }, () => {
  yearTick();
});

describe("GET /api/flows/:name answers the schedule in force", () => {
  const env = isolate("flowsched");
  let runtime: Runtime;
  let client: Client;
  let api: string;

  beforeAll(async () => {
    runtime = testRuntime(env, { flows: [yearly, unscheduled], roles: ["coordinator", "worker", "api"], port: 0 });
    await runtime.start();
    client = runtime.client();
    api = runtime.url!;
  });

  afterAll(async () => {
    await runtime?.stop({ timeout: 2 });
    await env.cleanup();
  });

  const describeFlow = async (name: string) => (await (await fetch(`${api}/api/flows/${name}`)).json()) as { schedule: unknown };
  const listed = async () =>
    (
      (await (await fetch(`${api}/api/schedules`)).json()) as { schedules: { flow: string; cron: string; timezone: string }[] }
    ).schedules.map((s) => ({ flow: s.flow, cron: s.cron, timezone: s.timezone }));

  it("follows a config version that changes the cron, as GET /api/schedules does", async () => {
    expect((await describeFlow("live_yearly")).schedule).toEqual({ cron: "0 0 1 1 *", timezone: "UTC" });
    expect((await describeFlow("live_unscheduled")).schedule).toBeNull();

    const applied = await client.config.apply(
      'flows:\n  live_yearly: { schedule: { cron: "0 0 1 7 *", timezone: Europe/Paris } }\n  live_unscheduled: { schedule: "0 0 1 1 *" }\n',
      "config/runtime.yaml",
      "ops",
    );
    const deadline = Date.now() + 5000;
    while (runtime.configVersion !== applied.version || (await listed()).length < 2) {
      if (Date.now() > deadline) throw new Error(`config v${applied.version} did not reach the stored schedules within 5 s`);
      await sleep(20);
    }
    expect(await listed()).toEqual([
      { flow: "live_unscheduled", cron: "0 0 1 1 *", timezone: "UTC" },
      { flow: "live_yearly", cron: "0 0 1 7 *", timezone: "Europe/Paris" },
    ]);
    expect((await describeFlow("live_yearly")).schedule).toEqual({ cron: "0 0 1 7 *", timezone: "Europe/Paris" });
    expect((await describeFlow("live_unscheduled")).schedule).toEqual({ cron: "0 0 1 1 *", timezone: "UTC" });
  });
});
