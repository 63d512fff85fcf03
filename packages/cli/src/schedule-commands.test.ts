import { describe, expect, it } from "vitest";
import { inZone } from "./schedule-commands.js";

describe("ax schedules", () => {
  it("prints a fire time in the schedule's own zone, with its offset", () => {
    const tick = new Date("2026-12-02T18:00:00Z");
    expect(inZone(tick, "Asia/Shanghai")).toBe("2026-12-03 02:00:00 +08:00");
    expect(inZone(tick, "UTC")).toBe("2026-12-02 18:00:00 +00:00");
    expect(inZone(new Date("2026-07-01T06:30:00Z"), "America/New_York")).toBe("2026-07-01 02:30:00 -04:00");
  });
});
