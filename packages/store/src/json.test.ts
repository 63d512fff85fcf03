import { describe, expect, it } from "vitest";
import { assertJson, toStorableText } from "./json.js";
import { AxNotJsonError, MAX_JSON_DEPTH } from "@ax/common";

const refusal = (value: unknown): AxNotJsonError => {
  try {
    assertJson(value, "payload");
  } catch (error) {
    return error as AxNotJsonError;
  }
  throw new Error("accepted");
};

describe("assertJson refuses strings PostgreSQL cannot store", () => {
  it("names the path of a NUL in a value and says what to do", () => {
    const error = refusal({ order: { lines: [{ sku: "a" }, { sku: "b\u0000" }] } });
    expect(error).toBeInstanceOf(AxNotJsonError);
    expect(error.path).toBe("$.order.lines[1].sku");
    expect(error.message).toMatch(
      /^payload cannot be stored in PostgreSQL: \$\.order\.lines\[1\]\.sku contains a NUL character \(\\u0000\) at index 1\. Remove the character/,
    );
  });

  it("refuses a lone high or low surrogate, and accepts the pair", () => {
    expect(refusal({ text: "cut \ud83d" }).message).toMatch(
      /\$\.text contains a lone UTF-16 surrogate \(\\ud83d\) at index 4.*code-point boundaries/,
    );
    expect(refusal(["\ude00 tail"]).message).toMatch(/\$\[0\] contains a lone UTF-16 surrogate \(\\ude00\) at index 0/);
    expect(() => assertJson({ text: "😀 ok", "😀": 1 }, "payload")).not.toThrow();
  });

  it("refuses a bad key, showing it escaped so the message itself holds no NUL", () => {
    const error = refusal({ fine: { "a\u0000b": 1 } });
    expect(error.path).toBe('$.fine["a\\u0000b"]');
    expect(error.message).toContain('$.fine["a\\u0000b"] is a key that contains a NUL character');
    expect(error.message).not.toMatch(/\u0000/);
    expect(refusal({ "\ud800": 1 }).path).toBe('$["\\ud800"]');
  });

  it("still names other non-JSON values as before", () => {
    expect(refusal({ f: () => 1 }).message).toMatch(/\$\.f is a function\. Pass only objects/);
  });
});

describe("toStorableText", () => {
  it("replaces NUL and lone surrogates with U+FFFD and keeps whole characters", () => {
    expect(toStorableText("a\u0000b\ud83d c\ude00 😀")).toBe("a\uFFFDb\uFFFD c\uFFFD 😀");
  });
});

const nested = (depth: number): unknown => {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = i % 2 ? [value] : { v: value };
  return value;
};

describe("assertJson follows JSON.stringify", () => {
  it("accepts a valid Date anywhere (stored as its ISO string) and refuses an invalid one", () => {
    expect(() => assertJson({ at: new Date("2026-03-08T07:00:00Z"), list: [new Date(0)] }, "result")).not.toThrow();
    const error = refusal({ at: new Date("x") });
    expect(error.path).toBe("$.at");
    expect(error.message).toMatch(/^payload is not plain JSON: \$\.at is an invalid Date\. Pass only/);
  });

  it("refuses a Date, a toJSON and an undefined property with exact: true, where the stored value would not be what was written", () => {
    expect(() => assertJson({ at: new Date(0) }, "argument 1", { exact: true })).toThrow(/argument 1 is not plain JSON: \$\.at is a Date/);
    expect(() => assertJson({ a: undefined }, "argument 1", { exact: true })).toThrow(/\$\.a is undefined/);
  });

  it("leaves an undefined property out and writes an undefined array item as null, as JSON.stringify does", () => {
    expect(() => assertJson({ id: 1, note: undefined, tags: ["a", undefined] }, "result")).not.toThrow();
    expect(refusal({ a: { b: undefined, c: () => 1 } }).path).toBe("$.a.c");
  });

  it("accepts a class with toJSON by what it writes, and checks that too", () => {
    class Money {
      constructor(private readonly cents: number) {}
      toJSON() {
        return { amount: this.cents / 100, currency: "EUR" };
      }
    }
    class Broken {
      toJSON() {
        return { n: 10n };
      }
    }
    expect(() => assertJson({ price: new Money(1999) }, "result")).not.toThrow();
    expect(refusal({ price: new Broken() }).message).toMatch(/\$\.price\.n is a BigInt/);
    class Throws {
      toJSON(): never {
        throw new Error("not serialisable");
      }
    }
    expect(refusal({ x: new Throws() }).message).toMatch(/\$\.x has a toJSON that threw \(not serialisable\)/);
  });

  it("still refuses other class instances", () => {
    expect(refusal({ m: new Map() }).message).toMatch(/\$\.m is a Map \(convert it to plain data\)/);
  });
});

describe("assertJson bounds nesting", () => {
  it(`accepts ${MAX_JSON_DEPTH} levels and refuses one more, saying the depth and the limit`, () => {
    expect(() => assertJson(nested(MAX_JSON_DEPTH), "payload")).not.toThrow();
    const error = refusal(nested(MAX_JSON_DEPTH + 1));
    expect(error).toBeInstanceOf(AxNotJsonError);
    expect(error.message).toMatch(
      new RegExp(
        `^payload is nested deeper than the limit of ${MAX_JSON_DEPTH} levels: \\$\\.v\\[0\\]\\.v.* is nested ${MAX_JSON_DEPTH + 1} levels deep\\. Flatten the data`,
      ),
    );
  });

  it("refuses 100,000 levels without overflowing the stack", () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(refusal(deep).message).toContain(`is nested deeper than the limit of ${MAX_JSON_DEPTH} levels`);
  });
});
