import { describe, expect, it } from "vitest";
import { conditionArgs } from "./process.js";

describe("conditionArgs", () => {
  it("keeps every form of node's export condition flag, with its value, and nothing else", () => {
    expect(
      conditionArgs([
        "--max-old-space-size=64",
        "--conditions",
        "node",
        "--conditions=development",
        "-C",
        "custom",
        "-C=edge",
        "--inspect",
      ]),
    ).toEqual(["--conditions", "node", "--conditions=development", "-C", "custom", "-C=edge"]);
  });

  it("drops a trailing flag that has no value", () => {
    expect(conditionArgs(["--conditions"])).toEqual([]);
  });
});
