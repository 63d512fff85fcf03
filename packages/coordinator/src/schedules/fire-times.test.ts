import { describe, expect, it } from "vitest";
import { catchUpTicks, dueTicks } from "./catch-up.js";
import { fireTimesBetween, nextFireTimes, scheduleProblem } from "./fire-times.js";

const iso = (dates: Date[]) => dates.map((d) => d.toISOString());
/** Fire times of a daily schedule within one local calendar day (UTC bounds given by the caller). */
const firesWithin = (cron: string, timezone: string, from: string, to: string) =>
  iso(fireTimesBetween({ cron, timezone }, new Date(from), new Date(to), 10));

describe("daylight saving: a 02:30 daily run happens once on the change days", () => {
  it("America/New_York, spring forward (2026-03-08: 02:00 -> 03:00, 02:30 does not exist)", () => {
    // The local day 2026-03-08 runs from 05:00Z (EST) to 04:00Z next day (EDT).
    expect(firesWithin("30 2 * * *", "America/New_York", "2026-03-08T05:00:00Z", "2026-03-09T04:00:00Z")).toEqual([
      "2026-03-08T07:00:00.000Z",
    ]);
  });

  it("America/New_York, fall back (2026-11-01: 01:30 happens twice, the run once)", () => {
    expect(firesWithin("30 2 * * *", "America/New_York", "2026-11-01T04:00:00Z", "2026-11-02T05:00:00Z")).toEqual([
      "2026-11-01T07:30:00.000Z",
    ]);
    expect(firesWithin("30 1 * * *", "America/New_York", "2026-11-01T04:00:00Z", "2026-11-02T05:00:00Z")).toEqual([
      "2026-11-01T05:30:00.000Z",
    ]);
  });

  it("Europe/Berlin, spring forward (2026-03-29: 02:00 -> 03:00)", () => {
    expect(firesWithin("30 2 * * *", "Europe/Berlin", "2026-03-28T23:00:00Z", "2026-03-29T22:00:00Z")).toEqual([
      "2026-03-29T01:00:00.000Z",
    ]);
  });

  it("Europe/Berlin, fall back (2026-10-25: 02:30 happens twice, the run once, at the first)", () => {
    expect(firesWithin("30 2 * * *", "Europe/Berlin", "2026-10-24T22:00:00Z", "2026-10-25T23:00:00Z")).toEqual([
      "2026-10-25T00:30:00.000Z",
    ]);
  });

  it("the days around a change keep their wall-clock time", () => {
    expect(iso(nextFireTimes({ cron: "30 2 * * *", timezone: "Europe/Berlin" }, new Date("2026-10-24T12:00:00Z"), 3))).toEqual([
      "2026-10-25T00:30:00.000Z",
      "2026-10-26T01:30:00.000Z",
      "2026-10-27T01:30:00.000Z",
    ]);
  });
});

describe("fire times", () => {
  it("6-field cron ticks each second; the bounds are (after, until]", () => {
    expect(firesWithin("* * * * * *", "UTC", "2026-01-01T00:00:00Z", "2026-01-01T00:00:03Z")).toEqual([
      "2026-01-01T00:00:01.000Z",
      "2026-01-01T00:00:02.000Z",
      "2026-01-01T00:00:03.000Z",
    ]);
  });

  it("a long gap keeps only the newest `limit` ticks", () => {
    expect(
      iso(fireTimesBetween({ cron: "* * * * *", timezone: "UTC" }, new Date("2025-01-01T00:00:00Z"), new Date("2026-01-01T00:00:00Z"), 2)),
    ).toEqual(["2025-12-31T23:59:00.000Z", "2026-01-01T00:00:00.000Z"]);
  });

  it("catch-up: none, latest, all bounded by maxCatchUp, nothing for a flow that never ticked", () => {
    const spec = { cron: "* * * * * *", timezone: "UTC", maxCatchUp: 2 };
    const last = new Date("2026-01-01T00:00:00Z");
    const now = new Date("2026-01-01T00:00:03.500Z");
    expect(catchUpTicks({ ...spec, catchUp: "none" }, last, now)).toEqual([]);
    expect(iso(catchUpTicks({ ...spec, catchUp: "latest" }, last, now))).toEqual(["2026-01-01T00:00:03.000Z"]);
    expect(iso(catchUpTicks({ ...spec, catchUp: "all" }, last, now))).toEqual(["2026-01-01T00:00:02.000Z", "2026-01-01T00:00:03.000Z"]);
    expect(iso(catchUpTicks({ ...spec, catchUp: "all", maxCatchUp: 100 }, last, now))).toHaveLength(3);
    expect(catchUpTicks({ ...spec, catchUp: "all" }, null, now)).toEqual([]);
  });

  it("refuses bad cron and unknown zones with what to do", () => {
    expect(scheduleProblem("* * *")?.field).toBe("cron");
    expect(scheduleProblem("* * * * * * *")?.message).toMatch(/use 5 .* or 6/);
    expect(scheduleProblem("61 * * * *")?.field).toBe("cron");
    expect(scheduleProblem("0 3 * * *", "Mars/Olympus")).toEqual({ field: "timezone", message: expect.stringMatching(/IANA/) });
    expect(scheduleProblem("@daily", "Europe/Berlin")).toBeUndefined();
    expect(scheduleProblem("*/5 * * * * *", "America/New_York")).toBeUndefined();
  });
});

describe("ticks a running coordinator finds due", () => {
  const spec = { cron: "*/10 * * * * *", timezone: "UTC", maxCatchUp: 2 };
  const at = (s: string) => new Date(`2026-01-01T00:00:${s}.000Z`);
  // Frozen from :05 to :52: five ticks missed, the one at :50 reached 2 s late.
  const from = at("05");
  const now = at("52");

  it("claims a tick reached late but in time, and of the missed ones what catchUp says", () => {
    const fresh = { skippedCapped: false };
    expect(dueTicks({ ...spec, catchUp: "none" }, from, now)).toEqual({ ticks: [at("50")], skipped: 4, ...fresh });
    expect(dueTicks({ ...spec, catchUp: "latest" }, from, now)).toEqual({ ticks: [at("40"), at("50")], skipped: 3, ...fresh });
    expect(dueTicks({ ...spec, catchUp: "all" }, from, now)).toEqual({ ticks: [at("30"), at("40"), at("50")], skipped: 2, ...fresh });
    expect(dueTicks({ ...spec, catchUp: "none" }, at("45"), now)).toEqual({ ticks: [at("50")], skipped: 0, ...fresh });
  });

  it("counts every tick of a long gap as skipped, and runs maxCatchUp of them however large", () => {
    const second = { cron: "* * * * * *", timezone: "UTC" };
    const woke = new Date("2026-01-01T01:00:00.500Z");
    const frozen = new Date(woke.getTime() - 3600_000);
    // 3,600 fire times; the 5 from 00:59:56 on were reached in time.
    expect(dueTicks({ ...second, catchUp: "none", maxCatchUp: 100 }, frozen, woke)).toMatchObject({ skipped: 3595, skippedCapped: false });
    const all = dueTicks({ ...second, catchUp: "all", maxCatchUp: 250 }, frozen, woke);
    expect(all.ticks).toHaveLength(255);
    expect(all.ticks[0]).toEqual(new Date("2026-01-01T00:55:46.000Z"));
    expect(all.skipped).toBe(3345);
    const day = dueTicks({ ...second, catchUp: "latest", maxCatchUp: 100 }, new Date(woke.getTime() - 86_400_000), woke);
    expect(day).toMatchObject({ skipped: 9999, skippedCapped: true });
    expect(day.ticks).toHaveLength(6);
  });
});
