/**
 * toTaskFailure is the one place any thrown value becomes the failure record stored in history:
 * whatever a task throws, it must answer (never throw itself) with bounded strings that
 * PostgreSQL can store.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { TaskFailure } from "@ax/store";
import { toTaskFailure } from "@ax/worker";
import { hostileString, isStorable } from "../../helpers/arbitraries.js";

/** Far above the record's own caps: only "bounded", whatever the exact caps become. */
const BOUND = 10_000;

const longText = fc.oneof(
  hostileString,
  fc.tuple(fc.constantFrom("😀", "é", "a", "\u0000", "👩‍👩‍👧"), fc.integer({ min: 1, max: 3000 })).map(([unit, n]) => unit.repeat(n)),
);

class CustomError extends Error {
  override name = "CustomError";
}

/** What a task may throw in ordinary code: errors with any text, with causes, and non-errors. */
const ordinaryThrown = fc.oneof(
  fc.tuple(longText, longText).map(([message, stack]) => Object.assign(new Error(message), { stack })),
  fc.tuple(longText, longText).map(([message, cause]) => new Error(message, { cause: new CustomError(cause) })),
  longText.map((name) => Object.assign(new Error("named"), { name })),
  longText.map((message) => new CustomError(message)),
  fc.jsonValue({ stringUnit: "binary", maxDepth: 2 }),
  longText,
  fc.constantFrom(undefined, null, 0, Number.NaN, Symbol("thrown"), 10n, () => 1),
);

/** What hostile code may throw: values whose conversion to text throws, or errors with non-text fields. */
const hostileThrown = fc.oneof(
  fc.constant(Object.create(null) as unknown),
  fc.constant({
    toString() {
      throw new Error("toString refuses");
    },
  }),
  fc.anything().map((message) => Object.assign(new Error("x"), { message })),
  fc.anything().map((name) => Object.assign(new Error("x"), { name })),
  fc.anything().map((stack) => Object.assign(new Error("x"), { stack })),
);

function checkShape(failure: TaskFailure): void {
  expect(typeof failure.name).toBe("string");
  expect(typeof failure.message).toBe("string");
  expect(failure.stack === null || typeof failure.stack === "string").toBe(true);
  expect(failure.kind).toBe("error");
  expect(failure.message.length).toBeLessThan(BOUND);
  expect((failure.stack ?? "").length).toBeLessThan(BOUND);
  expect(() => JSON.stringify(failure)).not.toThrow();
}

describe("toTaskFailure, property-based", () => {
  it("turns anything ordinary code throws into a bounded failure record", () => {
    fc.assert(
      fc.property(ordinaryThrown, (thrown) => checkShape(toTaskFailure(thrown))),
      { numRuns: 500 },
    );
  });

  // A cut by UTF-16 unit could split an emoji into a lone surrogate, and jsonb refuses that and
  // NUL: the failure write itself would fail.
  it("keeps only strings PostgreSQL can store (no NUL, no lone surrogate), whatever was thrown", () => {
    fc.assert(
      fc.property(ordinaryThrown, (thrown) => {
        const failure = toTaskFailure(thrown);
        for (const text of [failure.name, failure.message, failure.stack ?? ""])
          expect(isStorable(text), JSON.stringify(text.slice(0, 80))).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  // String(value) throws for a null-prototype object or a throwing toString, and a non-string
  // `message` has no slice(): the worker would then fail its own write.
  it("never throws itself, and gives text fields even for values that refuse to become text", () => {
    fc.assert(
      fc.property(hostileThrown, (thrown) => checkShape(toTaskFailure(thrown))),
      { numRuns: 200 },
    );
  });
});
