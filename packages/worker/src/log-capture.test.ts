import pino from "pino";
import { describe, expect, it } from "vitest";
import { captureLine, capturingLogger } from "./log-capture.js";

describe("a task log line as stored", () => {
  it("reads as pino prints it: placeholders filled, arguments with no placeholder left out", () => {
    expect(captureLine("info", ["charging %s for %d", "pay_1", 42], undefined)).toMatchObject({
      msg: "charging pay_1 for 42",
      fields: null,
    });
    expect(captureLine("info", ["fetching", { attempt: 1 }], undefined)).toMatchObject({ msg: "fetching", fields: null });
    expect(captureLine("info", ["payload %j", { a: 1 }], undefined).msg).toBe('payload {"a":1}');
  });

  it("takes the object argument and the bindings as fields, an error's message when there is no msg", () => {
    expect(captureLine("warn", [{ amount: 99.5 }, "amount %s", "high"], { step: "capture" })).toMatchObject({
      level: "warn",
      msg: "amount high",
      fields: { step: "capture", amount: 99.5 },
    });
    const line = captureLine("error", [new Error("declined")], undefined);
    expect(line.msg).toBe("declined");
    expect(line.fields).toMatchObject({ err: { name: "Error", message: "declined" } });
    expect(captureLine("info", [{ msg: "from the object" }], undefined).msg).toBe("from the object");
    expect(captureLine("fatal", [42], undefined)).toMatchObject({ level: "error", msg: "42" });
  });
});

describe("a task log line as stdout prints it", () => {
  it("masks secret-looking keys in any case at any depth of plain objects, and leaves errors and dates to pino", () => {
    const printed: Record<string, unknown>[] = [];
    const log = capturingLogger(pino({ level: "info" }, { write: (line: string) => printed.push(JSON.parse(line)) }), () => {});
    const at = new Date("2026-01-01T00:00:00Z");
    log.info({ Authorization: "Bearer xyz", a: { b: { password: "deep-pw" } }, list: [{ apiKey: "k" }], at, order: "o-1" }, "charging");
    log.child({ step: "capture" }).warn({ err: new Error("declined"), sessionToken: "t" }, "refused");
    expect(printed[0]).toMatchObject({
      msg: "charging",
      Authorization: "[redacted]",
      a: { b: { password: "[redacted]" } },
      list: [{ apiKey: "[redacted]" }],
      at: "2026-01-01T00:00:00.000Z",
      order: "o-1",
    });
    expect(printed[1]).toMatchObject({ msg: "refused", step: "capture", sessionToken: "[redacted]", err: { message: "declined" } });
  });
});
