import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { isUuid, newRunId } from "./ids.js";

describe("newRunId", () => {
  it("makes distinct UUIDs of version 7 and RFC 9562's variant", () => {
    const ids = Array.from({ length: 1000 }, () => newRunId());
    for (const id of ids) {
      expect(isUuid(id)).toBe(true);
      expect(id[14]).toBe("7");
      expect("89ab").toContain(id[19]);
    }
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("starts with the time in ms, so ids of later milliseconds sort after earlier ones", async () => {
    const before = Date.now();
    const first = newRunId();
    await sleep(2);
    const second = newRunId();
    const ms = Number.parseInt(first.replace(/-/g, "").slice(0, 12), 16);
    expect(ms).toBeGreaterThanOrEqual(before);
    expect(ms).toBeLessThanOrEqual(Date.now());
    expect([second, first].sort()).toEqual([first, second]);
  });

  it("sorts the ids of one millisecond in the order they were made, past 4,096 of them too", () => {
    const ids = Array.from({ length: 10_000 }, () => newRunId());
    expect([...ids].sort()).toEqual(ids);
    const ms = (id: string) => Number.parseInt(id.replace(/-/g, "").slice(0, 12), 16);
    // Borrowed milliseconds keep the ids at most a few ms ahead of the clock.
    expect(ms(ids.at(-1)!)).toBeLessThanOrEqual(Date.now() + 3);
  });
});
