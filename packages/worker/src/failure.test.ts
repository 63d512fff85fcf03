import { describe, expect, it } from "vitest";
import { toStorableText } from "@ax/store";
import { reviveError, serialiseError } from "./executors/protocol.js";
import { toTaskFailure } from "./failure.js";
import { AxStoreError } from "@ax/common";

const storable = (text: string) => toStorableText(text) === text;

describe("toTaskFailure", () => {
  it("cuts long messages and stacks at code-point boundaries, never leaving half an emoji", () => {
    // An odd prefix puts every cut of a UTF-16 unit count between the two halves of an emoji.
    const error = new Error(`x${"😀".repeat(3000)}`);
    error.stack = `Error: y${"😀".repeat(3000)}`;
    const failure = toTaskFailure(error);
    expect(failure.message.length).toBeLessThanOrEqual(2000);
    expect(failure.message.length).toBeGreaterThan(1990);
    // Said to be cut, not silently shorter.
    expect(failure.message.endsWith("…")).toBe(true);
    expect(failure.stack!.endsWith("…")).toBe(true);
    expect(storable(failure.message)).toBe(true);
    expect(storable(failure.stack!)).toBe(true);
    expect(failure.stack!.length).toBeLessThanOrEqual(4000);
  });

  it("records a task's own connection error as the task's, not as a PostgreSQL error", () => {
    // The invoice API refusing the connection is the task failing, whatever its code says.
    const refused = Object.assign(new Error("connect ECONNREFUSED 10.0.0.7:443"), { code: "ECONNREFUSED" });
    expect(toTaskFailure(refused)).toMatchObject({ name: "Error", message: "connect ECONNREFUSED 10.0.0.7:443" });
  });

  it("records a plain subclass by its class name, and a name the error set as is, inline and from a child alike", () => {
    class ConfigError extends Error {}
    class Named extends Error {
      override name = "CustomName";
    }
    for (const revive of [(e: Error) => e, (e: Error) => reviveError(serialiseError(e))]) {
      expect(toTaskFailure(revive(new ConfigError("missing setting"))).name).toBe("ConfigError");
      expect(toTaskFailure(revive(new Named("x"))).name).toBe("CustomName");
      expect(toTaskFailure(revive(new TypeError("x"))).name).toBe("TypeError");
      expect(toTaskFailure(revive(new Error("x"))).name).toBe("Error");
      expect(toTaskFailure(revive(Object.assign(new ConfigError("x"), { name: "Error" }))).name).toBe("Error");
    }
    expect(toTaskFailure(new Error("outer", { cause: new ConfigError("inner") })).message).toBe("outer [cause: ConfigError: inner]");
  });

  it("replaces NUL and lone surrogates in names, messages, causes and non-errors", () => {
    const error = Object.assign(new Error("bad\u0000 \ud83d", { cause: new Error("inner\u0000") }), { name: "My\u0000Error" });
    const failure = toTaskFailure(error);
    expect(failure.name).toBe("My\uFFFDError");
    expect(failure.message).toBe("bad\uFFFD \uFFFD [cause: Error: inner\uFFFD]");
    expect(toTaskFailure("thrown\u0000").message).toBe("thrown\uFFFD");
  });

  it("records what a non-Error said: a plain object as JSON, an error-like object by its name and message, inline and from a child alike", () => {
    for (const record of [(v: unknown) => toTaskFailure(v), (v: unknown) => toTaskFailure(reviveError(serialiseError(v)))]) {
      expect(record({ code: 42, msg: "obj" })).toMatchObject({ name: "NonErrorThrown", message: '{"code":42,"msg":"obj"}' });
      expect(record(["a", 1])).toMatchObject({ name: "NonErrorThrown", message: '["a",1]' });
      expect(record({ name: "InvoiceApiError", message: "503 from the invoice API" })).toMatchObject({
        name: "InvoiceApiError",
        message: "503 from the invoice API",
      });
      expect(record(42)).toMatchObject({ name: "NonErrorThrown", message: "42" });
      // The text is logged, published and sent to alert sinks: secret-looking keys are masked.
      const leaky = record({ message: "obj thrown", password: "OBJPW", nested: [{ token: "OBJTOK" }] });
      expect(leaky.message).toBe('{"message":"obj thrown","password":"[redacted]","nested":[{"token":"[redacted]"}]}');
    }
    const hostile = new Proxy(
      {},
      {
        get() {
          throw new Error("no");
        },
      },
    );
    expect(toTaskFailure(hostile)).toMatchObject({ name: "NonErrorThrown" });
  });

  it("keeps a store error's words once, without repeating its driver error as the cause", () => {
    const stored = new AxStoreError(Object.assign(new Error("unsupported Unicode escape sequence"), { code: "22P05" }));
    expect(toTaskFailure(stored)).toMatchObject({
      name: "AxStoreError",
      message: "PostgreSQL refused the statement: unsupported Unicode escape sequence (SQLSTATE 22P05)",
    });
  });
});
