import { describe, expect, it } from "vitest";
import type { ResolvedTaskOptions } from "../task-definition.js";
import { LimitChanges } from "./limit-changes.js";
import { NO_CLUSTER_LIMITS } from "./limit-spec.js";

const base = { concurrency: null, rateLimit: null, rateLimitKey: null, concurrencyKey: null, pool: null, queue: "default" };
const task = (name: string, options: Partial<ResolvedTaskOptions> = {}) => ({ ...base, name, ...options }) as ResolvedTaskOptions;
const perKey = (max: number, perMs: number) =>
  ({ max, perMs, key: () => "k", keySource: "k" }) as unknown as ResolvedTaskOptions["rateLimitKey"];

describe("LimitChanges", () => {
  it("reports nothing at the first look, then the tasks whose limits changed since the last", () => {
    const changes = new LimitChanges();
    expect(changes.look([task("a", { concurrency: 2 }), task("b")], NO_CLUSTER_LIMITS)).toEqual({ changed: [], rateKeyLoosened: [] });
    expect(changes.look([task("a", { concurrency: 2 }), task("b")], NO_CLUSTER_LIMITS).changed).toEqual([]);
    expect(
      changes.look([task("a", { concurrency: 4 }), task("b", { rateLimit: { max: 1, perMs: 1000 } })], NO_CLUSTER_LIMITS).changed,
    ).toEqual(["a", "b"]);
    // A cluster limit changes every task's.
    expect(changes.look([task("a", { concurrency: 4 })], { maxConcurrency: 8, pools: {} }).changed).toEqual(["a"]);
  });

  it("says when a rate limit per key lets more through: raised, a shorter window, or removed; not when tightened", () => {
    const changes = new LimitChanges();
    const look = (limit: ResolvedTaskOptions["rateLimitKey"]) =>
      changes.look([task("r", { rateLimitKey: limit })], NO_CLUSTER_LIMITS).rateKeyLoosened.map((t) => t.name);
    expect(look(perKey(1, 60_000))).toEqual([]);
    expect(look(perKey(5, 60_000))).toEqual(["r"]);
    expect(look(perKey(5, 1000))).toEqual(["r"]);
    expect(look(perKey(2, 1000))).toEqual([]);
    expect(look(perKey(2, 5000))).toEqual([]);
    expect(look(null)).toEqual(["r"]);
    expect(look(perKey(1, 1000))).toEqual([]);
  });
});
