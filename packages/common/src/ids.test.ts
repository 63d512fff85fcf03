import { describe, expect, it } from "vitest";
import { isUuid, newRunId } from "./ids.js";

describe("newRunId", () => {
  it("makes UUIDs of version 7 that sort in the order they were made", () => {
    const ids = Array.from({ length: 1000 }, () => newRunId());
    for (const id of ids) {
      expect(isUuid(id)).toBe(true);
      expect(id[14]).toBe("7");
    }
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
  });
});
