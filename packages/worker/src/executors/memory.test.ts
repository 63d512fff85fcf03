import { describe, expect, it } from "vitest";
import { AxMemoryLimitError } from "./memory.js";

describe("AxMemoryLimitError", () => {
  it("says a use a fraction over the limit as over it, never equal to it", () => {
    const error = new AxMemoryLimitError("buffers", 128.3, 128);
    expect(error.message).toMatch(/used 129 MB .* over its 128 MB limit/);
    expect(error.name).toBe("AxResourceLimitError");
  });
});
