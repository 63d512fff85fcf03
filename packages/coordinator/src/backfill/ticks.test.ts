import { describe, expect, it } from "vitest";
import { scheduleTicks } from "./ticks.js";

const iso = (dates: Date[]) => dates.map((d) => d.toISOString());

describe("scheduleTicks", () => {
  it("includes a tick at from and excludes one at to", async () => {
    expect(iso(await scheduleTicks("0 * * * *", new Date("2026-01-01T00:00:00Z"), new Date("2026-01-01T03:00:00Z"), 100))).toEqual([
      "2026-01-01T00:00:00.000Z",
      "2026-01-01T01:00:00.000Z",
      "2026-01-01T02:00:00.000Z",
    ]);
  });

  it("reads 6-field crons and stops at the limit", async () => {
    expect(await scheduleTicks("*/10 * * * * *", new Date("2026-01-01T00:00:00Z"), new Date("2026-01-01T01:00:00Z"), 5)).toHaveLength(5);
  });

  it("follows the time zone across the autumn change: a 02:30 daily tick fires once", async () => {
    const ticks = await scheduleTicks(
      { cron: "30 2 * * *", timezone: "America/New_York" },
      new Date("2026-10-31T12:00:00Z"),
      new Date("2026-11-03T12:00:00Z"),
      100,
    );
    expect(iso(ticks)).toEqual(["2026-11-01T07:30:00.000Z", "2026-11-02T07:30:00.000Z", "2026-11-03T07:30:00.000Z"]);
  });

  it("leaves the event loop free while it lists a long range", async () => {
    let turns = 0;
    const ticking = setInterval(() => turns++, 0);
    try {
      const ticks = await scheduleTicks("* * * * * *", new Date("2026-01-01T00:00:00Z"), new Date("2026-01-02T00:00:00Z"), 20_001);
      expect(ticks).toHaveLength(20_001);
    } finally {
      clearInterval(ticking);
    }
    // Listed in one go, no timer could have fired until the end.
    expect(turns).toBeGreaterThan(5);
  });
});
