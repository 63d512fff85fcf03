import { describe, expect, it } from "vitest";
import type { ResolvedTaskOptions } from "../task-definition.js";
import { limitSpecOf, NO_CLUSTER_LIMITS } from "./limit-spec.js";

const task = (limits: Partial<Pick<ResolvedTaskOptions, "concurrency" | "rateLimit" | "pool">>) =>
  ({ name: "t", concurrency: null, rateLimit: null, pool: null, ...limits }) as ResolvedTaskOptions;

describe("the limits an attempt must hold", () => {
  it("a rate limit or concurrency that lets nothing start makes the task wait, saying why, instead of failing each fetch", () => {
    expect(limitSpecOf(task({ rateLimit: { max: 2, perMs: 0 } }), NO_CLUSTER_LIMITS)).toEqual({
      reason: "rate limit 2 per 0 ms lets nothing start: set max to at least 1 and per to at least 1ms",
    });
    expect(limitSpecOf(task({ rateLimit: { max: 0, perMs: 1000 } }), NO_CLUSTER_LIMITS)).toHaveProperty("reason");
    expect(limitSpecOf(task({ concurrency: 0 }), NO_CLUSTER_LIMITS)).toEqual({
      reason: "concurrency 0 lets nothing start: set it to a whole number of at least 1",
    });
  });

  it("a pool the configuration does not size, or too small for the task, is the reason too", () => {
    expect(limitSpecOf(task({ pool: { name: "db", slots: 1 } }), NO_CLUSTER_LIMITS)).toEqual({
      reason: "pool db has no size: set pools.db in the configuration",
    });
    expect(limitSpecOf(task({ pool: { name: "db", slots: 3 } }), { maxConcurrency: null, pools: { db: 2 } })).toEqual({
      reason: "pool db has 2 slots but the task takes 3",
    });
  });

  it("valid limits become the semaphores and rate windows the gate takes together", () => {
    const spec = limitSpecOf(task({ concurrency: 2, rateLimit: { max: 5, perMs: 1000 }, pool: { name: "db", slots: 2 } }), {
      maxConcurrency: 10,
      pools: { db: 4 },
    });
    expect(spec).toEqual({
      semaphores: [
        { key: "task:t", capacity: 2, weight: 1, label: "concurrency" },
        { key: "pool:db", capacity: 4, weight: 2, label: "pool db" },
        { key: "cluster", capacity: 10, weight: 1, label: "max_concurrency" },
      ],
      rates: [{ key: "rate:t", max: 5, perMs: 1000, label: "rate limit" }],
    });
  });
});
