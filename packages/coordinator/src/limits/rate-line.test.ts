import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { isolate } from "../../../../test/helpers/isolated.js";
import { type Acquired, describeBlocked, LimitGate, type LimitSpec, type RateLimit } from "./gate.js";

const only = (rate: RateLimit): LimitSpec => ({ semaphores: [], rates: [rate] });

/** How long the waiter is told to wait, or "ok" when it passed. */
function turnOf(result: Acquired): number | "ok" {
  if (result.ok) return "ok";
  if (result.blocked.kind !== "rate") throw new Error(`expected the rate limit to block, got ${describeBlocked(result.blocked)}`);
  return result.blocked.retryInMs;
}

describe("a rate limit's line (runs of one key wait their turns in order)", () => {
  const env = isolate("rateline");
  const connections: Redis[] = [];
  const gates: LimitGate[] = [];

  const newGate = (leaseMs?: number) => {
    const redis = new Redis(env.redis);
    connections.push(redis);
    const gate = new LimitGate(redis, env.prefix, { leaseMs });
    gates.push(gate);
    return gate;
  };
  const ask = (gate: LimitGate, rate: RateLimit, waiter: string, place: number) =>
    gate.acquire(only(rate), { rateLine: { waiter, place } }).then(turnOf);
  /** BullMQ's hash of the waiter's job (`queue|id`): a waiter whose job is gone leaves the line once its turn came. */
  const jobKey = (waiter: string) => `${env.prefix}:${waiter.replace("|", ":")}`;
  const jobsExist = async (...waiters: string[]) => {
    const redis = new Redis(env.redis);
    connections.push(redis);
    for (const waiter of waiters) await redis.hset(jobKey(waiter), "name", "job");
    return redis;
  };

  afterEach(async () => {
    for (const g of gates.splice(0)) await g.close();
  });

  afterAll(async () => {
    for (const redis of connections) redis.disconnect();
    await env.cleanup();
  });

  it("tells each waiter a turn one window after the one ahead of it, by place, whatever order they asked in", async () => {
    const gate = newGate();
    const rate = { key: "turns", max: 1, perMs: 10_000, label: "rate limit key k" };
    expect(await gate.acquire(only(rate)).then(turnOf)).toBe("ok");
    for (const [waiter, place] of [
      ["q|w3", 3],
      ["q|w1", 1],
      ["q|w2", 2],
    ] as const)
      await ask(gate, rate, waiter, place);
    // Asked again, each learns its turn behind everyone ahead of it in the line.
    const turns = [await ask(gate, rate, "q|w1", 1), await ask(gate, rate, "q|w2", 2), await ask(gate, rate, "q|w3", 3)];
    // The permit's window ends in about 10 s; each waiter then takes one window of its own.
    const expected = [10_000, 20_000, 30_000];
    turns.forEach((turn, i) => {
      expect(turn).toBeLessThanOrEqual(expected[i]!);
      expect(turn).toBeGreaterThan(expected[i]! - 2000);
    });
  });

  it("keeps a newcomer behind the waiters ahead of it, even when the window has room", async () => {
    const gate = newGate();
    const rate = { key: "no_cutting", max: 1, perMs: 400, label: "rate limit key k" };
    await jobsExist("q|first", "q|later");
    expect(await gate.acquire(only(rate)).then(turnOf)).toBe("ok");
    const first = await ask(gate, rate, "q|first", 1);
    expect(first).toBeGreaterThan(0);
    await sleep((first as number) + 50);
    // The window is empty, but "first" has not come back yet: the later one waits for it.
    expect(await ask(gate, rate, "q|later", 2)).toBeGreaterThan(0);
    expect(await ask(gate, rate, "q|first", 1)).toBe("ok");
    const later = await ask(gate, rate, "q|later", 2);
    expect(later).toBeGreaterThan(200);
    await sleep((later as number) + 20);
    expect(await ask(gate, rate, "q|later", 2)).toBe("ok");
  });

  it("lets waiters whose turns fall in one window pass in either order", async () => {
    const gate = newGate();
    const rate = { key: "pair", max: 2, perMs: 300, label: "rate limit key k" };
    await jobsExist("q|a", "q|b");
    expect(await gate.acquire(only(rate)).then(turnOf)).toBe("ok");
    expect(await gate.acquire(only(rate)).then(turnOf)).toBe("ok");
    const a = await ask(gate, rate, "q|a", 1);
    const b = await ask(gate, rate, "q|b", 2);
    expect(typeof a === "number" && typeof b === "number").toBe(true);
    await sleep(Math.max(a as number, b as number) + 20);
    // Two slots free at once: the second in line need not wait for the first to come back.
    expect(await ask(gate, rate, "q|b", 2)).toBe("ok");
    expect(await ask(gate, rate, "q|a", 1)).toBe("ok");
  });

  it("a waiter that lets its turn pass by a lease loses its place to those behind it", async () => {
    const gate = newGate(300);
    const rate = { key: "lapsed", max: 1, perMs: 200, label: "rate limit key k" };
    // Its job is still there (its worker died holding it), so only the lease takes its place.
    await jobsExist("q|gone");
    expect(await gate.acquire(only(rate)).then(turnOf)).toBe("ok");
    const gone = await ask(gate, rate, "q|gone", 1);
    await sleep((gone as number) + 300 + 100);
    // "gone" never came back: the next one does not wait for it any longer.
    expect(await ask(gate, rate, "q|next", 2)).toBe("ok");
  });

  it("a waiter whose job is gone (its run was cancelled) leaves the line as soon as its turn came", async () => {
    const gate = newGate();
    const rate = { key: "cancelled", max: 1, perMs: 300, label: "rate limit key k" };
    const redis = await jobsExist("q|cancelled", "q|behind");
    expect(await gate.acquire(only(rate)).then(turnOf)).toBe("ok");
    const turn = await ask(gate, rate, "q|cancelled", 1);
    expect(await ask(gate, rate, "q|behind", 2)).toBeGreaterThan(turn as number);
    await redis.del(jobKey("q|cancelled"));
    await sleep((turn as number) + 20);
    // Its slot is free and nobody will take it: the one behind goes now, not a window later.
    expect(await ask(gate, rate, "q|behind", 2)).toBe("ok");
  });

  it("a waiter that passes under a changed limit leaves the old limit's line too, should the limit return", async () => {
    const gate = newGate();
    const before = { key: "changed", max: 1, perMs: 60_000, label: "rate limit key k" };
    const raised = { ...before, max: 5 };
    expect(await gate.acquire(only(before)).then(turnOf)).toBe("ok");
    expect(await ask(gate, before, "q|w1", 1)).toBeGreaterThan(50_000);
    expect(await ask(gate, raised, "q|w1", 1)).toBe("ok");
    // Rolled back: w1 has passed, so w2 is first in the old line and waits one window, not two.
    const turn = await ask(gate, before, "q|w2", 2);
    expect(turn).toBeLessThanOrEqual(60_000);
    expect(turn).toBeGreaterThan(50_000);
  });

  it("a waiter a semaphore refuses leaves the rate limit's line until it gets past that semaphore", async () => {
    const gate = newGate();
    const rate = { key: "both", max: 1, perMs: 60_000, label: "rate limit key k" };
    const pool = { key: "both_pool", capacity: 1, weight: 1, label: "pool p" };
    const both: LimitSpec = { semaphores: [pool], rates: [rate] };
    expect(await gate.acquire(only(rate)).then(turnOf)).toBe("ok");
    expect((await gate.acquire(both, { rateLine: { waiter: "q|w1", place: 1 } })).ok).toBe(false);
    expect((await gate.acquire({ semaphores: [pool], rates: [] })).ok).toBe(true);
    const refused = await gate.acquire(both, { rateLine: { waiter: "q|w1", place: 1 } });
    expect(!refused.ok && refused.blocked.kind).toBe("semaphore");
    // w1 no longer holds the first turn: the next waiter gets the end of the current window.
    const next = await ask(gate, rate, "q|w2", 2);
    expect(next).toBeLessThanOrEqual(60_000);
    expect(next).toBeGreaterThan(50_000);
  });
});
