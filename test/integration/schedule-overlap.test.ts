import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, type AxEvent, type Client, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";
import { steps, ticksOf, type TickRow } from "../helpers/schedule-ticks.js";

/** 2.5 s of work that stops when its run is cancelled. */
const slow = ax.task({ name: "slow_tick" }, async () => {
  await sleep(2500, undefined, { signal: ax.context().signal }).catch(() => undefined);
  return ax.context().logicalDate;
});
const policies = ["skip", "queue", "allow", "cancel_previous"] as const;
const quick = ax.task({ name: "quick_tick" }, () => ax.context().logicalDate);
/** A run triggered with a delay of an hour is no overlap for the ticks before it is due. */
const delayedFlow = ax.flow({ name: "overlap_skip_delayed", schedule: "* * * * * *", overlap: "skip" }, () => quick());
const flows = [
  ...policies.map((overlap) => ax.flow({ name: `overlap_${overlap}`, schedule: "* * * * * *", overlap }, () => slow())),
  delayedFlow,
];

/** Runs of a flow's ticks in creation order, with their recorded times. */
const runsOf = (ticks: TickRow[]) => ticks.filter((t) => t.run_id).sort((a, b) => a.created! - b.created!);

describe("overlap policies: a 2.5 s run on a 1 s schedule", () => {
  const env = isolate("overlap");
  let runtime: Runtime;
  let client: Client;
  const ticks = new Map<string, TickRow[]>();
  const skippedEvents: AxEvent[] = [];
  let unsubscribe: (() => void) | undefined;

  beforeAll(async () => {
    unsubscribe = ax.onEvent((event) => {
      if (event.name === "schedule_skipped") skippedEvents.push(event);
    });
    runtime = testRuntime(env, { flows, maxConcurrency: 20 });
    await runtime.start();
    client = runtime.client();
    const delayed = await client.triggerFlow("overlap_skip_delayed", null, { delay: "1h" });
    await sleep(7500);
    for (const flow of flows) await client.pauseSchedule(flow.name);
    await client.cancel(delayed);
    // Paused: no new ticks; a queued tick still gets its run once the earlier one ends.
    const deadline = Date.now() + 30_000;
    for (;;) {
      const open = await env.sql(
        "select 1 from runs where status in ('pending', 'running') union all select 1 from schedule_ticks where status = 'queued' and run_id is null",
      );
      if (open.length === 0) break;
      if (Date.now() > deadline) throw new Error("runs did not finish");
      await sleep(200);
    }
    for (const flow of flows) ticks.set(flow.name, await ticksOf(env, flow.name));
  }, 60_000);

  afterAll(async () => {
    unsubscribe?.();
    await runtime?.stop();
    await env.cleanup();
  });

  it("a run delayed to later does not make the ticks before it skip", () => {
    const delayedTicks = ticks.get("overlap_skip_delayed")!;
    expect(delayedTicks.length).toBeGreaterThanOrEqual(5);
    expect(delayedTicks.filter((t) => t.status === "skipped")).toEqual([]);
  });

  it("records every tick: consecutive seconds, none lost while the schedules ran", () => {
    for (const flow of flows) {
      const recorded = ticks.get(flow.name)!;
      expect(recorded.length, flow.name).toBeGreaterThanOrEqual(5);
      expect(
        steps(recorded).every((s) => s === 1),
        flow.name,
      ).toBe(true);
    }
  });

  it("skip: runs never overlap; the ticks in between are recorded skipped with the reason", () => {
    const recorded = ticks.get("overlap_skip")!;
    const runs = runsOf(recorded);
    for (let i = 1; i < runs.length; i++) expect(runs[i]!.started!).toBeGreaterThanOrEqual(runs[i - 1]!.finished!);
    const skipped = recorded.filter((t) => t.status === "skipped");
    expect(skipped.length).toBeGreaterThanOrEqual(2);
    expect(skipped.every((t) => /run [0-9a-f-]{36} of this flow is still unfinished \(overlap: skip\)/.test(t.reason ?? ""))).toBe(true);
    // Each skipped tick is also a cluster event, with the tick's logical date and reason.
    const events = skippedEvents.filter((e) => e.flow === "overlap_skip");
    expect(events.map((e) => e.logicalDate).sort()).toEqual(skipped.map((t) => new Date(t.at).toISOString()).sort());
    expect(events.every((e) => e.reason?.includes("(overlap: skip)"))).toBe(true);
    expect(runs.every((r) => r.run_status === "success")).toBe(true);
  });

  it("queue: one tick buffered, started when the earlier run ends; more ticks meanwhile skipped", () => {
    const recorded = ticks.get("overlap_queue")!;
    const runs = runsOf(recorded);
    for (let i = 1; i < runs.length; i++) {
      expect(runs[i]!.created!).toBeGreaterThanOrEqual(runs[i - 1]!.finished!);
      expect(runs[i]!.started!).toBeGreaterThanOrEqual(runs[i - 1]!.finished!);
    }
    const queued = recorded.filter((t) => t.status === "queued");
    expect(queued.length).toBeGreaterThanOrEqual(1);
    // A buffered tick's run is created after its tick, once the earlier run finished, and carries its logical date.
    expect(queued.every((t) => t.run_id && t.run_logical === t.at && t.created! > t.at)).toBe(true);
    const skipped = recorded.filter((t) => t.status === "skipped");
    expect(skipped.length).toBeGreaterThanOrEqual(1);
    expect(skipped.every((t) => /is already queued behind run .* \(overlap: queue\)/.test(t.reason ?? ""))).toBe(true);
  });

  it("allow: every tick gets a run, and they run at the same time", () => {
    const recorded = ticks.get("overlap_allow")!;
    expect(recorded.every((t) => t.status === "created" && t.run_id)).toBe(true);
    const runs = runsOf(recorded);
    const overlapping = runs.slice(1).filter((r, i) => r.started! < runs[i]!.finished!);
    expect(overlapping.length).toBeGreaterThanOrEqual(2);
    expect(runs.every((r) => r.run_status === "success")).toBe(true);
  });

  it("cancel_previous: each tick cancels the unfinished earlier run, then starts", () => {
    const recorded = ticks.get("overlap_cancel_previous")!;
    expect(recorded.every((t) => t.status === "created" && t.run_id)).toBe(true);
    const runs = runsOf(recorded);
    // A run cancelled before its first attempt never started: only started runs are compared.
    for (let i = 1; i < runs.length; i++)
      if (runs[i]!.started !== null) expect(runs[i]!.started!).toBeGreaterThanOrEqual(runs[i - 1]!.finished!);
    expect(runs.slice(0, -1).every((r) => r.run_status === "cancelled")).toBe(true);
    expect(runs.at(-1)!.run_status).toBe("success");
  });

  it("cancel_previous: a run it cancelled says which tick cancelled it, and why", async () => {
    const runs = runsOf(ticks.get("overlap_cancel_previous")!);
    const [cancelled, next] = [runs[0]!, runs[1]!];
    const run = await client.getRun(cancelled.run_id!);
    expect(run.tasks[0]!.error?.message).toContain(
      `run ${cancelled.run_id} was cancelled (by the schedule's tick of ${new Date(next.at).toISOString()}, overlap: cancel_previous)`,
    );
  });
});
