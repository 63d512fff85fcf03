import { execFile } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { ax, AxScheduleNotFoundError, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { AX_BIN, REPO_ROOT } from "../helpers/processes.js";
import { testRuntime } from "../helpers/runtime.js";
import { ticksOf } from "../helpers/schedule-ticks.js";

const ping = ax.task({ name: "admin_ping" }, () => ax.context().logicalDate);
const scheduled = ax.flow({ name: "admin_flow", schedule: { cron: "* * * * * *", timezone: "Europe/Berlin" }, overlap: "allow" }, () =>
  ping(),
);
const unscheduled = ax.flow({ name: "admin_flow" }, () => ping());

async function axCli(env: { storage: string; prefix: string }, args: string[]): Promise<string> {
  const { stdout } = await promisify(execFile)(process.execPath, [AX_BIN, "--storage", env.storage, "--prefix", env.prefix, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, NO_COLOR: "1" },
    timeout: 80_000,
  });
  return stdout;
}

async function newTick(env: ReturnType<typeof isolate>, after: number, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (((await ticksOf(env, "admin_flow")).at(-1)?.at ?? 0) <= after) {
    if (Date.now() > deadline) throw new Error("no new tick");
    await sleep(100);
  }
}

describe("schedule pause/resume, listing, removal, lag metric", () => {
  const env = isolate("schedadm");
  let runtime: Runtime | undefined;
  const start = async (flow: typeof scheduled) => {
    runtime = testRuntime(env, { flows: [flow], roles: ["coordinator", "worker", "api"], port: 0 });
    await runtime.start();
    return runtime;
  };
  const stop = async () => {
    await runtime?.stop();
    runtime = undefined;
  };

  afterAll(async () => {
    await stop();
    await env.cleanup();
  });

  it("pause holds across restarts; resume over HTTP; the CLI lists and pauses; removal stops ticks", async () => {
    const rt = await start(scheduled);
    await newTick(env, 0);
    // The tick's row commits before the coordinator observes its lag: read until it has.
    const onTime = /ax_schedule_lag_seconds_bucket\{le="1",flow="admin_flow"\} [1-9]/;
    let metrics = "";
    for (const deadline = Date.now() + 10_000; !onTime.test(metrics) && Date.now() < deadline; await sleep(100)) {
      metrics = await (await fetch(`${rt.url}/metrics`)).text();
    }
    expect(metrics).toMatch(onTime);

    const client = rt.client();
    expect(await client.pauseSchedule("admin_flow")).toEqual({ flow: "admin_flow", paused: true });
    await expect(client.pauseSchedule("no_such_flow")).rejects.toBeInstanceOf(AxScheduleNotFoundError);
    // Held from the storage directly (a Client, `ax schedule pause`): audited as the local user.
    expect((await client.audit({ limit: 5 })).map((e) => [e.actor.startsWith("cli:"), e.action, e.target])).toEqual([
      [true, "schedule.pause", "admin_flow"],
    ]);
    const pausedAt = (await ticksOf(env, "admin_flow")).length;
    await stop();
    await start(scheduled);
    await sleep(2500);
    expect((await ticksOf(env, "admin_flow")).length).toBe(pausedAt);

    const listed = await axCli(env, ["schedules"]);
    expect(listed).toMatch(/admin_flow {2}cron "\* \* \* \* \* \*" {2}zone Europe\/Berlin {2}PAUSED/);
    // When it would fire, were it resumed: Berlin's wall clock, with its offset (+01:00 in winter, +02:00 in summer).
    expect(listed).toMatch(/\n {2}next if resumed \(Europe\/Berlin\): (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+0[12]:00(, |\n)){3}/);
    expect(listed).toMatch(/last tick: \S+Z created run [0-9a-f-]{36} (success|running|pending)/);

    const resumed = await fetch(`${runtime!.url}/api/flows/admin_flow/schedule/resume`, { method: "POST" });
    expect(await resumed.json()).toEqual({ flow: "admin_flow", paused: false });
    expect((await fetch(`${runtime!.url}/api/flows/nope/schedule/pause`, { method: "POST" })).status).toBe(404);
    await newTick(env, Date.now());

    expect(await axCli(env, ["schedule", "pause", "admin_flow"])).toMatch(/schedule of admin_flow paused/);
    const [row] = await env.sql<{ paused: boolean }>("select paused from schedules where flow = 'admin_flow'");
    expect(row!.paused).toBe(true);

    // The same flow without a schedule: its schedule is gone and its ticks stop.
    await stop();
    await start(unscheduled);
    expect(await runtime!.client().listSchedules()).toEqual([]);
    expect(await axCli(env, ["schedules"])).not.toMatch(/admin_flow/);
    await expect(runtime!.client().resumeSchedule("admin_flow")).rejects.toBeInstanceOf(AxScheduleNotFoundError);
    const removedAt = (await ticksOf(env, "admin_flow")).length;
    await sleep(2000);
    expect((await ticksOf(env, "admin_flow")).length).toBe(removedAt);

    // Back in the definition (a rolling deploy, a config edit in two steps): still paused, as it was when removed.
    await stop();
    await start(scheduled);
    await sleep(2000);
    expect((await ticksOf(env, "admin_flow")).length).toBe(removedAt);
    expect(await axCli(env, ["schedules"])).toMatch(/admin_flow {2}cron "\* \* \* \* \* \*" {2}zone Europe\/Berlin {2}PAUSED/);
  }, 90_000);
});
