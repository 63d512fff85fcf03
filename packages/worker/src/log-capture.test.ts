import { describe, expect, it } from "vitest";
import { captureLine } from "./log-capture.js";

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
