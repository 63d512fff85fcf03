import { describe, expect, it } from "vitest";
import { runsChannel } from "./repositories/create-run-in-tx.js";

describe("runsChannel", () => {
  it("is one channel per schema, always a valid identifier length", () => {
    expect(runsChannel("public")).toBe("ax_runs_public");
    const long = "s".repeat(63);
    expect(runsChannel(long).length).toBeLessThanOrEqual(63);
    expect(runsChannel(long)).not.toBe(runsChannel(`${"s".repeat(62)}t`));
  });
});
