import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { ProgressWrites } from "./progress-writes.js";

describe("ProgressWrites", () => {
  it("stores heartbeats in the order sent, one at a time, and the newest before the attempt closes", async () => {
    const stored: unknown[] = [];
    let inFlight = 0;
    let most = 0;
    const writes = new ProgressWrites(
      async (progress) => {
        inFlight++;
        most = Math.max(most, inFlight);
        // Slower writes first: independent writes would land out of order.
        await sleep(10 - Math.min(9, stored.length));
        stored.push(progress);
        inFlight--;
      },
      () => undefined,
    );
    for (let i = 0; i < 50; i++) {
      writes.submit({ i });
      if (i % 10 === 0) await sleep(3);
    }
    await writes.flushed();
    expect(most).toBe(1);
    expect(stored.at(-1)).toEqual({ i: 49 });
    const order = stored.map((p) => (p as { i: number }).i);
    expect(order).toEqual([...order].sort((a, b) => a - b));
  });

  it("keeps going after a failed write, and reports it", async () => {
    const failures: unknown[] = [];
    const stored: unknown[] = [];
    const writes = new ProgressWrites(
      async (progress) => {
        if ((progress as { i: number }).i === 0) throw new Error("PostgreSQL away");
        stored.push(progress);
      },
      (err) => failures.push(err),
    );
    writes.submit({ i: 0 });
    writes.submit({ i: 1 });
    await writes.flushed();
    expect(failures).toHaveLength(1);
    expect(stored).toEqual([{ i: 1 }]);
  });
});
