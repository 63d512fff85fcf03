import { describe, expect, it } from "vitest";
import type { RunCount } from "@ax/store";
import { FinishedRunCounts } from "./finished-run-counts.js";

/** A clock the test moves, and a count that takes `tookMs` of it and says how often it ran. */
function setup(tookMs: number) {
  let now = 1_000_000;
  let readings = 0;
  const count = async (): Promise<RunCount[]> => {
    readings++;
    now += tookMs;
    return [{ flow: "f", status: "success", count: readings }];
  };
  const counts = new FinishedRunCounts(count, () => now);
  return {
    counts,
    advance: (ms: number) => {
      now += ms;
    },
    readings: () => readings,
  };
}

describe("FinishedRunCounts", () => {
  it("reads a cheap count again at nearly every scrape", async () => {
    const { counts, advance, readings } = setup(2);
    await counts.read();
    advance(150);
    await counts.read();
    advance(150);
    expect((await counts.read())[0]!.count).toBe(3);
    expect(readings()).toBe(3);
  });

  it("keeps a count 50 times as long as it took, at most 5 minutes", async () => {
    const { counts, advance } = setup(2000);
    await counts.read();
    advance(60_000);
    expect((await counts.read())[0]!.count).toBe(1);
    advance(41_000);
    expect((await counts.read())[0]!.count).toBe(2);

    const slow = setup(60_000);
    await slow.counts.read();
    slow.advance(299_000);
    await slow.counts.read();
    expect(slow.readings()).toBe(1);
    slow.advance(2000);
    await slow.counts.read();
    expect(slow.readings()).toBe(2);
  });

  it("shares one reading between scrapes that come at once", async () => {
    const { counts, readings } = setup(5);
    await Promise.all([counts.read(), counts.read(), counts.read()]);
    expect(readings()).toBe(1);
  });

  it("reads again after a failed reading", async () => {
    let fail = true;
    const counts = new FinishedRunCounts(async () => {
      if (fail) throw new Error("down");
      return [];
    });
    await expect(counts.read()).rejects.toThrow("down");
    fail = false;
    expect(await counts.read()).toEqual([]);
  });
});
