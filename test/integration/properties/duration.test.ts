/**
 * Durations against arbitrary numbers, strings and values: a finite, non-negative number of
 * milliseconds that a timer can hold, or a refusal that quotes the value and shows the accepted
 * forms; never a silent Infinity or NaN.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ax, AxDefinitionError, parseDuration } from "ax-scheduler";
import { hostileString } from "../../helpers/arbitraries.js";

/** Node fires any timer longer than this after 1 ms. */
const MAX_TIMER_MS = 2 ** 31 - 1;

const durationText = fc.oneof(
  hostileString,
  fc
    .tuple(
      fc.oneof(fc.nat(), fc.double({ min: 0, max: 1e6, noNaN: true }), fc.constantFrom(1e300, -1, -0.5)),
      fc.constantFrom("", "ms", "s", "m", "h", "d", "w", "y", " s", "seconds", "x"),
    )
    .map(([n, unit]) => `${n}${unit}`),
);

describe("durations, property-based", () => {
  it("turns any number into milliseconds or refuses it", () => {
    fc.assert(
      fc.property(fc.double(), (seconds) => {
        try {
          const ms = parseDuration(seconds);
          expect(Number.isFinite(ms) && ms >= 0, `${seconds} s -> ${ms} ms`).toBe(true);
          expect(ms).toBe(Math.round(seconds * 1000));
        } catch (error) {
          expect(error).toBeInstanceOf(Error);
          expect((error as Error).message).toMatch(/must be a finite, non-negative number of seconds/);
        }
      }),
      { numRuns: 500 },
    );
  });

  it("turns any string into milliseconds or refuses it with the accepted forms", () => {
    fc.assert(
      fc.property(durationText, (text) => {
        try {
          const ms = parseDuration(text);
          expect(Number.isFinite(ms) && ms >= 0, `"${text}" -> ${ms} ms`).toBe(true);
        } catch (error) {
          expect(error).toBeInstanceOf(Error);
          expect((error as Error).message).toContain("is not a duration; write seconds as a number or a string like");
        }
      }),
      { numRuns: 500 },
    );
  });

  it("accepts a task timeout only when a timer can hold it, and refuses any other value as a definition error", () => {
    fc.assert(
      fc.property(fc.oneof(fc.double(), durationText), fc.constantFrom("timeout", "heartbeatTimeout"), (value, option) => {
        try {
          const task = ax.task({ name: "prop_timeout", [option]: value }, () => 1);
          const ms = option === "timeout" ? task.options.timeoutMs : task.options.heartbeatTimeoutMs;
          expect(ms !== null && Number.isFinite(ms) && ms >= 0 && ms <= MAX_TIMER_MS, `${String(value)} -> ${ms} ms`).toBe(true);
        } catch (error) {
          expect(error, String(error)).toBeInstanceOf(AxDefinitionError);
          expect((error as Error).message).toContain(`task "prop_timeout" has invalid options: ${option}:`);
        }
      }),
      { numRuns: 500 },
    );
  });
});
