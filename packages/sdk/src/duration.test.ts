import { describe, expect, it } from "vitest";
import { parseDuration } from "./duration.js";

describe("parseDuration", () => {
  it("reads a number, and a string of digits alike, as seconds", () => {
    expect(parseDuration(60)).toBe(60_000);
    expect(parseDuration("60")).toBe(60_000);
    expect(parseDuration(" 1.5 ")).toBe(1_500);
  });

  it("reads a unit when one is given", () => {
    expect(parseDuration("500ms")).toBe(500);
    expect(parseDuration("10s")).toBe(10_000);
    expect(parseDuration("5m")).toBe(300_000);
    expect(parseDuration("90d")).toBe(90 * 86_400_000);
  });

  it("refuses what is no duration, showing the forms it takes", () => {
    expect(() => parseDuration("soon")).toThrow('"soon" is not a duration; write seconds as a number or a string like "500ms"');
    expect(() => parseDuration("")).toThrow("is not a duration");
    expect(() => parseDuration(-1)).toThrow("must be a finite, non-negative number of seconds");
  });
});
