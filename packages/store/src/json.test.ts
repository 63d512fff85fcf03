import { describe, expect, it } from "vitest";
import { assertJson, toStorableText } from "./json.js";
import { AxNotJsonError } from "@ax/common";

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
