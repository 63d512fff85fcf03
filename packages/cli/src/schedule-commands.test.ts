import { describe, expect, it } from "vitest";
import type { ScheduleInfo } from "ax-scheduler";
import { describeSchedule, inZone } from "./schedule-commands.js";

describe("ax schedules", () => {
  it("prints a fire time in the schedule's own zone, with its offset", () => {
    const tick = new Date("2026-12-02T18:00:00Z");
    expect(inZone(tick, "Asia/Shanghai")).toBe("2026-12-03 02:00:00 +08:00");
    expect(inZone(tick, "UTC")).toBe("2026-12-02 18:00:00 +00:00");
    expect(inZone(new Date("2026-07-01T06:30:00Z"), "America/New_York")).toBe("2026-07-01 02:30:00 -04:00");
  });

  it("says when a schedule is overdue: a fire time with no tick, and what to check", () => {
    const schedule: ScheduleInfo = {
      flow: "nightly_report",
      cron: "0 2 * * *",
      timezone: "Asia/Shanghai",
      overlap: "skip",
      catchUp: "none",
      maxCatchUp: 100,
      paused: false,
      resumedAt: null,
      updatedAt: new Date("2026-12-01T00:00:00Z"),
      lastTick: null,
      nextFireTimes: [new Date("2026-12-03T18:00:00Z")],
      overdueSince: new Date("2026-12-02T18:00:00Z"),
    };
    expect(describeSchedule(schedule)).toContain(
      "OVERDUE: no tick since it should have fired at 2026-12-03 02:00:00 +08:00: is a coordinator running with this flow in its entry",
    );
    expect(describeSchedule({ ...schedule, overdueSince: null })).not.toContain("OVERDUE");
  });
});
