import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { createWorkerMetrics } from "./metrics.js";

function bucketCounts(text: string, metric: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const [, le, n] of text.matchAll(new RegExp(`${metric}_bucket\\{le="([^"]+)"[^}]*\\} (\\d+)`, "g"))) counts.set(le!, Number(n));
  return counts;
}

describe("worker duration histograms", () => {
  it("tell a 10-minute attempt from a 1-hour one, and keep the millisecond buckets", async () => {
    const registry = new Registry();
    const metrics = createWorkerMetrics(registry);
    for (const seconds of [0.002, 600, 3600]) metrics.attemptDuration.observe({ task: "t", outcome: "success" }, seconds);
    for (const seconds of [0.002, 600, 3600]) metrics.queueWait.observe({ task: "t" }, seconds);
    const text = await registry.metrics();
    for (const metric of ["ax_attempt_duration_seconds", "ax_queue_wait_seconds"]) {
      const counts = bucketCounts(text, metric);
      expect(counts.get("0.001")).toBe(0);
      expect(counts.get("0.005")).toBe(1);
      expect(counts.get("300")).toBe(1);
      expect(counts.get("600")).toBe(2);
      expect(counts.get("1800")).toBe(2);
      expect(counts.get("3600")).toBe(3);
      expect([...counts.keys()]).toEqual(expect.arrayContaining(["7200", "21600", "86400", "+Inf"]));
    }
  });
});
