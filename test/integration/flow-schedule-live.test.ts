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

  it("schedule: null in YAML removes the schedule the code sets, until a version drops the line", async () => {
    const removed = await client.config.apply("flows:\n  live_yearly: { schedule: null }\n", "config/runtime.yaml", "ops");
    const deadline = Date.now() + 5000;
    while (runtime.configVersion !== removed.version || (await listed()).some((s) => s.flow === "live_yearly")) {
      if (Date.now() > deadline) throw new Error(`config v${removed.version} did not remove the stored schedule within 5 s`);
      await sleep(20);
    }
    expect((await describeFlow("live_yearly")).schedule).toBeNull();
    const restored = await client.config.apply("{}\n", "config/runtime.yaml", "ops");
    while (runtime.configVersion !== restored.version || !(await listed()).some((s) => s.flow === "live_yearly")) {
      if (Date.now() > deadline + 5000) throw new Error(`config v${restored.version} did not restore the code's schedule within 5 s`);
      await sleep(20);
    }
    expect((await describeFlow("live_yearly")).schedule).toEqual({ cron: "0 0 1 1 *", timezone: "UTC" });
  });

  it("a cron changed just after one of its fire times does not run that tick: it was not owed", async () => {
    // A fire time 1.5 s ago, inside the 5 s within which a running coordinator still takes a tick it reached late,
    // and after the loop's last pass (it sleeps up to a minute between the yearly crons' fire times).
    await sleep(3000);
    const past = new Date(Date.now() - 1500);
    const cron = `${past.getUTCSeconds()} ${past.getUTCMinutes()} ${past.getUTCHours()} ${past.getUTCDate()} ${past.getUTCMonth() + 1} *`;
    const applied = await client.config.apply(
      `flows:\n  live_yearly: { schedule: { cron: "${cron}", timezone: UTC } }\n`,
      "config/runtime.yaml",
      "ops",
    );
    const deadline = Date.now() + 5000;
    while (runtime.configVersion !== applied.version || !(await listed()).some((s) => s.cron === cron)) {
      if (Date.now() > deadline) throw new Error(`config v${applied.version} did not reach the stored schedules within 5 s`);
      await sleep(20);
    }
    await sleep(1500);
    const scheduled = (await client.listRuns({ flow: "live_yearly" })).filter((r) => r.trigger === "schedule");
    expect(scheduled.map((r) => r.logicalDate)).toEqual([]);
  });
});
