import { afterEach, describe, expect, it } from "vitest";
import {
  between,
  dateTime,
  duration,
  durationTick,
  fieldPieces,
  fireSeconds,
  progressText,
  setFormatLanguage,
  shortId,
  waitingFor,
  zoneName,
} from "./format";

afterEach(() => setFormatLanguage("en"));

describe("duration", () => {
  it("never shows a unit's full size in the smaller unit: 60 s carries into the minutes", () => {
    expect(duration(999.6)).toBe("1.0 s");
    expect(duration(9_960)).toBe("10 s");
    expect(duration(59_600)).toBe("1 m");
    expect(duration(8 * 60_000 + 59_700)).toBe("9 m");
    expect(duration(3_599_700)).toBe("1 h");
  });

  it("leaves out a zero second or minute part", () => {
    expect(duration(60_000)).toBe("1 m");
    expect(duration(61_000)).toBe("1 m 1 s");
    expect(duration(2 * 3_600_000 + 5 * 60_000)).toBe("2 h 5 m");
  });

  it("reads a start the browser's clock has not reached yet as just started, never negative", () => {
    expect(duration(-35)).toBe("0 ms");
    const start = new Date(Date.now() + 400).toISOString();
    expect(between(start, null)).toBe("0 ms");
  });

  it("writes chart ticks exactly, without trailing zeros", () => {
    expect([0, 750, 1500, 2250, 3000].map(durationTick)).toEqual(["0 ms", "750 ms", "1.5 s", "2.25 s", "3 s"]);
    expect([60_000, 80_000, 120_000].map(durationTick)).toEqual(["1 m", "1 m 20 s", "2 m"]);
  });

  it("speaks Chinese after the switch", () => {
    setFormatLanguage("zh");
    expect(duration(61_000)).toBe("1 分 1 秒");
  });
});

describe("times", () => {
  it("writes a schedule's tick in its own zone, with the date, whole minutes", () => {
    const year = new Date().getUTCFullYear();
    expect(dateTime(`${year}-12-02T01:00:00Z`, { timeZone: "Europe/Berlin", seconds: false })).toBe(`${weekday(year)} 2 Dec, 02:00`);
    expect(dateTime("2020-12-02T01:00:00Z", { timeZone: "Europe/Berlin", seconds: false })).toBe("Wed, 2 Dec 2020, 02:00");
    expect(zoneName(new Date("2026-12-02T01:00:00Z"), "America/New_York")).toBe("EST");
  });

  it("writes a delayed run's due time as other times; other reasons as the API words them", () => {
    expect(waitingFor("due at 2026-12-01T20:29:23.428Z", "due at")).toMatch(/^due at \w{3},? .*\d\d:\d\d:\d\d \S+$/);
    expect(waitingFor("concurrency 1/1", "due at")).toBe("concurrency 1/1");
  });
});

describe("fire times", () => {
  it("keep their seconds for a 6-field cron, or times that are not whole minutes", () => {
    expect(fireSeconds("*/20 * * * * *", ["2030-01-02T06:56:00Z"])).toBe(true);
    expect(fireSeconds("0 3 * * *", ["2030-01-02T03:00:00Z", "2030-01-03T03:00:00Z"])).toBe(false);
    expect(fireSeconds("@every 20s", ["2030-01-02T06:56:20Z"])).toBe(true);
  });
});

/** 2 December's weekday in `year`, as en-GB abbreviates it. */
function weekday(year: number): string {
  return new Date(Date.UTC(year, 11, 2, 12)).toLocaleDateString("en-GB", { weekday: "short", timeZone: "UTC" });
}

describe("progressText", () => {
  it("says what a node has done in the few characters it has", () => {
    expect(progressText(42, 24)).toBe("42%");
    expect(progressText({ done: 75, total: 900 }, 24)).toBe("75/900 (8%)");
    expect(progressText({ total: 10, processed: 10 }, 24)).toBe("10/10 (100%)");
    expect(progressText({ stage: "upload", files: 3 }, 24)).toBe("stage upload · files 3");
    expect(progressText("copying table 3 of 12 (orders_archive)", 24)).toBe("copying table 3 of 12 (…");
    expect(progressText({ nested: { a: 1 } }, 24)).toBe('{"nested":{"a":1}}');
  });
});

describe("fieldPieces", () => {
  it("cuts a value after its commas only, keeping each field with its closing brace", () => {
    expect(fieldPieces("{ name: core_db, slots: 1 }")).toEqual(["{ name: core_db, ", "slots: 1 }"]);
    expect(fieldPieces('["InvoiceApiError","TimeoutError"]')).toEqual(['["InvoiceApiError",', '"TimeoutError"]']);
    expect(fieldPieces("1m")).toEqual(["1m"]);
  });
});

describe("shortId", () => {
  it("shows a run id by its random end, since runs of the same minute share their id's first characters", () => {
    expect(shortId("019af3c2-7d1e-7a00-9c4b-5e2f0a1b3c4d")).toBe("0a1b3c4d");
  });
});
