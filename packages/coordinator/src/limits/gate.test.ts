import { setTimeout as sleep } from "node:timers/promises";
import { AxLimitError } from "@ax/common";
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { isolate } from "../../../../test/helpers/isolated.js";
import { configVersionKey, markConfigVersion } from "./config-version.js";
import { type Acquired, describeBlocked, type GateConfig, LimitGate, type LimitSpec, type Permit, type SemaphoreLimit } from "./gate.js";

const sem = (key: string, capacity: number, weight = 1, label = `pool ${key}`): SemaphoreLimit => ({ key, capacity, weight, label });
const spec = (semaphores: SemaphoreLimit[], rates: LimitSpec["rates"] = []): LimitSpec => ({ semaphores, rates });

function permitOf(result: Acquired): Permit {
  if (!result.ok) throw new Error(`expected a permit, blocked by ${describeBlocked(result.blocked)}`);
  return result.permit;
}

describe("LimitGate", () => {
  const env = isolate("limits");
  const connections: Redis[] = [];
  const gates: LimitGate[] = [];

  const newGate = (leaseMs?: number, config?: GateConfig) => {
    const redis = new Redis(env.redis);
    connections.push(redis);
    const gate = new LimitGate(redis, env.prefix, { leaseMs, config });
    gates.push(gate);
    return gate;
  };

  let gate: LimitGate;
  beforeAll(() => {
    gate = newGate();
  });

  afterEach(async () => {
    for (const g of gates) await g.close();
  });

  afterAll(async () => {
    for (const redis of connections) redis.disconnect();
    await env.cleanup();
  });

  it("takes nothing when one of two semaphores is full", async () => {
    permitOf(await gate.acquire(spec([sem("aon_a", 1)])));
    const result = await gate.acquire(
      spec([sem("aon_b", 1), sem("aon_a", 1)], [{ key: "aon_r", max: 1, perMs: 60_000, label: "rate limit" }]),
    );
    expect(result).toEqual({
      ok: false,
      blocked: { kind: "semaphore", label: "pool aon_a", key: "aon_a", used: 1, capacity: 1, weight: 1, kept: 0, woken: [] },
    });
    expect(await gate.usage(["aon_a", "aon_b"])).toEqual(
      new Map([
        ["aon_a", 1],
        ["aon_b", 0],
      ]),
    );
    // The rate slot was not spent by the refused attempt either.
    permitOf(await gate.acquire(spec([sem("aon_b", 1)], [{ key: "aon_r", max: 1, perMs: 60_000, label: "rate limit" }])));
  });

  it("says how many more permits the tightest limit has room for", async () => {
    const rate = { key: "room_rate", max: 5, perMs: 60_000, label: "rate limit" };
    const rooms: number[] = [];
    for (let i = 0; i < 3; i++) {
      const answer = await gate.acquire(spec([sem("room_pool", 6, 2), sem("room_task", 10)], [rate]));
      if (!answer.ok) throw new Error("expected a permit");
      rooms.push(answer.room);
    }
    // The pool (weight 2 of 6) is the tightest: the rate (5 a minute) would still allow 4, 3, 2.
    expect(rooms).toEqual([2, 1, 0]);
    expect((await gate.acquire(spec([sem("room_pool", 6, 2)]))).ok).toBe(false);
    // Under a roomier semaphore the rate decides: its fourth slot of five leaves room for one.
    const rated = await gate.acquire(spec([sem("room_other", 10)], [rate]));
    expect(rated.ok && rated.room).toBe(1);
  });

  it("takes no semaphore slot when a rate limit blocks", async () => {
    const rate = { key: "aon_rate", max: 1, perMs: 60_000, label: "rate limit" };
    permitOf(await gate.acquire(spec([], [rate])));
    const result = await gate.acquire(spec([sem("aon_c", 5)], [rate]));
    expect(result.ok).toBe(false);
    expect(await gate.usage(["aon_c"])).toEqual(new Map([["aon_c", 0]]));
  });

  it("counts weights: a pool of 3 takes 2 + 1, then blocks at 3/3", async () => {
    permitOf(await gate.acquire(spec([sem("core_db", 3, 2)])));
    permitOf(await gate.acquire(spec([sem("core_db", 3, 1)])));
    const third = await gate.acquire(spec([sem("core_db", 3, 1)]));
    expect(third).toEqual({
      ok: false,
      blocked: { kind: "semaphore", label: "pool core_db", key: "core_db", used: 3, capacity: 3, weight: 1, kept: 0, woken: [] },
    });
    expect(describeBlocked((third as { blocked: Parameters<typeof describeBlocked>[0] }).blocked)).toBe("pool core_db (3/3)");
    // A full pool needs no reserve to explain why a start waits.
    const full = { kind: "semaphore" as const, label: "pool core_db", key: "core_db", used: 3, capacity: 3, weight: 1, kept: 2, woken: [] };
    expect(describeBlocked(full)).toBe("pool core_db (3/3)");
  });

  it("keeps a refused heavy start's slots in reserve: one-slot starts cannot hold it back for ever", async () => {
    // A pool of 3 kept busy by one-slot starts; a start taking 2 arrives while all 3 are used.
    const light = [];
    for (let i = 0; i < 3; i++) light.push(permitOf(await gate.acquire(spec([sem("shared", 3, 1)]))));
    const heavy = await gate.acquire(spec([sem("shared", 3, 2)]));
    expect(heavy).toMatchObject({ ok: false, blocked: { used: 3, weight: 2, kept: 0 } });
    expect(describeBlocked((heavy as { blocked: Parameters<typeof describeBlocked>[0] }).blocked)).toBe("pool shared (3/3, needs 2)");
    // One frees: without the reserve the next one-slot start takes it, and so on for ever.
    await gate.release(light.shift()!);
    const cut = await gate.acquire(spec([sem("shared", 3, 1)]));
    expect(cut).toMatchObject({ ok: false, blocked: { used: 2, weight: 1, kept: 2 } });
    expect(describeBlocked((cut as { blocked: Parameters<typeof describeBlocked>[0] }).blocked)).toBe(
      "pool shared (2/3, 2 kept for a start that needs 2)",
    );
    // The heavy start still waits for its second slot; then it takes both, and the reserve ends.
    expect(await gate.acquire(spec([sem("shared", 3, 2)]))).toMatchObject({ ok: false, blocked: { used: 2, weight: 2 } });
    await gate.release(light.shift()!);
    const heavyPermit = permitOf(await gate.acquire(spec([sem("shared", 3, 2)])));
    await gate.release(light.shift()!);
    permitOf(await gate.acquire(spec([sem("shared", 3, 1)])));
    await gate.release(heavyPermit);
  });

  it("a heavy start that is only a look (its queue was found empty) keeps no reserve when refused", async () => {
    const holders = [];
    for (let i = 0; i < 2; i++) holders.push(permitOf(await gate.acquire(spec([sem("looked", 2, 1)]))));
    expect(await gate.acquire(spec([sem("looked", 2, 2)]), { onlyALook: true })).toMatchObject({ ok: false, blocked: { kept: 0 } });
    await gate.release(holders.pop()!);
    // The one-slot start that has work takes the free slot: nothing was kept for a start with none.
    holders.push(permitOf(await gate.acquire(spec([sem("looked", 2, 1)]))));
    for (const permit of holders) await gate.release(permit);
  });

  it("a reserve lapses after a lease when its heavy start stops asking", async () => {
    const short = newGate(300);
    const holders = [];
    for (let i = 0; i < 2; i++) holders.push(permitOf(await short.acquire(spec([sem("lapsing", 2, 1)]))));
    expect(await short.acquire(spec([sem("lapsing", 2, 2)]))).toMatchObject({ ok: false });
    await short.release(holders.pop()!);
    expect(await short.acquire(spec([sem("lapsing", 2, 1)]))).toMatchObject({ ok: false, blocked: { kept: 2 } });
    await new Promise((resolve) => setTimeout(resolve, 400));
    permitOf(await short.acquire(spec([sem("lapsing", 2, 1)])));
  });

  it("applies a capacity lowered below current use until use drops", async () => {
    const first = permitOf(await gate.acquire(spec([sem("resized", 2)])));
    permitOf(await gate.acquire(spec([sem("resized", 2)])));
    expect(await gate.acquire(spec([sem("resized", 1)]))).toMatchObject({ ok: false, blocked: { used: 2, capacity: 1 } });
    await gate.release(first);
    expect(await gate.acquire(spec([sem("resized", 1)]))).toMatchObject({ ok: false, blocked: { used: 1, capacity: 1 } });
  });

  it("release frees the slots and publishes the keys somebody waits for to every process", async () => {
    const other = newGate();
    const heard: string[][] = [];
    const unsubscribe = await other.onFreed((keys) => heard.push(keys));
    const permit = permitOf(await gate.acquire(spec([sem("freed_a", 1), sem("freed_b", 2, 2)])));
    expect((await other.acquire(spec([sem("freed_a", 1)]))).ok).toBe(false);
    await gate.release(permit);
    // freed_b refused nobody, so nobody needs to hear of it.
    await expect.poll(() => heard, { timeout: 5000 }).toEqual([["freed_a"]]);
    permitOf(await other.acquire(spec([sem("freed_a", 1)])));
    // A second release of the same permit removes nothing and stays silent.
    await gate.release(permit);
    await sleep(50);
    expect(heard).toHaveLength(1);
    await unsubscribe();
  });

  it("a release that nobody waits for sends no message; the first after a refusal does", async () => {
    const heard: string[][] = [];
    const unsubscribe = await gate.onFreed((keys) => heard.push(keys));
    for (let i = 0; i < 20; i++) await gate.release(permitOf(await gate.acquire(spec([sem("quiet", 2)]))));
    const held = permitOf(await gate.acquire(spec([sem("quiet", 2, 2)])));
    expect((await gate.acquire(spec([sem("quiet", 2)]))).ok).toBe(false);
    await gate.release(held);
    await expect.poll(() => heard, { timeout: 5000 }).toEqual([["quiet"]]);
    // The refusal was answered: the next free slot is news to nobody.
    await gate.release(permitOf(await gate.acquire(spec([sem("quiet", 2)]))));
    await sleep(50);
    expect(heard).toEqual([["quiet"]]);
    await unsubscribe();
  });

  it("refuses a start that could never pass with AxLimitError", async () => {
    await expect(gate.acquire(spec([sem("core_db", 3, 4)]))).rejects.toThrow(AxLimitError);
    await expect(gate.acquire(spec([sem("core_db", 3, 4)]))).rejects.toThrow(
      "pool core_db (key core_db): a start takes 4 slots but the limit has 3, so it could never start; raise the limit or take fewer slots",
    );
    await expect(gate.acquire(spec([sem("x", 3, 0)]))).rejects.toThrow(/whole number of at least 1/);
    await expect(gate.acquire(spec([sem("x", 3), sem("x", 3)]))).rejects.toThrow(/named twice/);
    await expect(gate.acquire(spec([], [{ key: "r", max: 0, perMs: 1000, label: "rate limit" }]))).rejects.toThrow(/lets nothing start/);
  });

  it("rate limit: never more than max starts in any window, and retryInMs says when the next fits", async () => {
    const rate = { key: "rate5", max: 5, perMs: 1000, label: "rate limit" };
    const starts: { sent: number; received: number }[] = [];
    let firstBlocked: { sent: number; received: number; retryInMs: number } | undefined;
    const until = Date.now() + 2600;
    while (Date.now() < until) {
      const sent = performance.now();
      const result = await gate.acquire(spec([], [rate]));
      const received = performance.now();
      if (result.ok) {
        starts.push({ sent, received });
        continue;
      }
      if (result.blocked.kind !== "rate") throw new Error("blocked by a semaphore");
      firstBlocked ??= { sent, received, retryInMs: result.blocked.retryInMs };
      await sleep(Math.max(1, result.blocked.retryInMs / 2));
    }
    expect(starts.length).toBeGreaterThanOrEqual(13);
    // Redis ran start i between its sent and received times, so this bounds its window from below;
    // the gate counts whole milliseconds of Redis time, hence 999 and not 1000.
    for (let i = 0; i + 5 < starts.length; i++) expect(starts[i + 5]!.received - starts[i]!.sent).toBeGreaterThan(999);
    // The same bounds for "start 0's window ends in retryInMs": each call ran somewhere between its
    // sent and received times (a loaded machine can take tens of milliseconds either way).
    const [first, blocked] = [starts[0]!, firstBlocked!];
    expect(blocked.retryInMs).toBeGreaterThanOrEqual(first.sent + 1000 - blocked.received - 2);
    expect(blocked.retryInMs).toBeLessThanOrEqual(first.received + 1000 - blocked.sent + 2);
  });

  it("rate limit: a slot frees when retryInMs says, and a later ask counts down", async () => {
    // A window long enough that a loaded machine still asks three times within it.
    const rate = { key: "rate_exact", max: 2, perMs: 2000, label: "rate limit" };
    permitOf(await gate.acquire(spec([], [rate])));
    permitOf(await gate.acquire(spec([], [rate])));
    const started = performance.now();
    const blocked = await gate.acquire(spec([], [rate]));
    // Redis measured retryInMs from when the call reached it: between these two instants.
    const answered = performance.now();
    if (blocked.ok || blocked.blocked.kind !== "rate") throw new Error("expected the rate limit to block");
    const retryInMs = blocked.blocked.retryInMs;
    await sleep(retryInMs - 100);
    const asked = performance.now();
    const early = await gate.acquire(spec([], [rate]));
    const earlyAnswered = performance.now();
    // A timer may fire late on a loaded machine, never early: either still blocked with the rest
    // of the wait, or already past it. Redis read its clock for each call somewhere between the
    // call and its answer, so the rest lies between what those bounds give (Redis counts whole ms).
    if (early.ok) expect(earlyAnswered - started).toBeGreaterThanOrEqual(retryInMs - 2);
    else {
      const rest = (early.blocked as { retryInMs: number }).retryInMs;
      expect(rest).toBeGreaterThanOrEqual(retryInMs - (earlyAnswered - started) - 2);
      expect(rest).toBeLessThanOrEqual(retryInMs - (asked - answered) + 2);
    }
    await sleep(Math.max(0, answered + retryInMs + 2 - performance.now()));
    if (!early.ok) permitOf(await gate.acquire(spec([], [rate])));
  });

  it("an unused release gives the rate slot back; a used one does not", async () => {
    const rate = { key: "rate_unused", max: 1, perMs: 60_000, label: "rate limit" };
    await gate.release(permitOf(await gate.acquire(spec([], [rate]))), { unused: true });
    await gate.release(permitOf(await gate.acquire(spec([], [rate]))));
    const blocked = await gate.acquire(spec([], [rate]));
    expect(blocked).toMatchObject({ ok: false, blocked: { kind: "rate", max: 1, perMs: 60_000 } });
    expect(describeBlocked((blocked as { blocked: Parameters<typeof describeBlocked>[0] }).blocked)).toBe("rate limit 1 per 1m");
  });

  it("drops a holder that stops renewing after the lease, keeps one that renews", async () => {
    // A lease three times the first look: a loaded machine (the whole suite in parallel) may take
    // hundreds of milliseconds between the acquire and that look.
    const dead = newGate(1500);
    const live = newGate(1500);
    const lost = permitOf(await dead.acquire(spec([sem("leased", 2)])));
    permitOf(await live.acquire(spec([sem("leased", 2)])));
    const renewing = setInterval(() => void live.renew(), 300);
    try {
      await sleep(500);
      expect((await live.usage(["leased"])).get("leased")).toBe(2);
      await sleep(1500);
      expect((await live.usage(["leased"])).get("leased")).toBe(1);
      // The stalled holder comes back: its work still runs, so it counts again.
      expect(await dead.renew()).toEqual([lost]);
      expect((await live.usage(["leased"])).get("leased")).toBe(2);
      expect(await dead.renew()).toEqual([]);
    } finally {
      clearInterval(renewing);
    }
  });

  it("a rate slot an unused permit gives back is published when someone was refused it", async () => {
    const heard: string[][] = [];
    const unsubscribe = await gate.onFreed((keys) => heard.push(keys));
    const rate = { key: "rate_given_back", max: 1, perMs: 60_000, label: "rate limit" };
    // Nobody refused: giving the slot back is news to nobody.
    await gate.release(permitOf(await gate.acquire(spec([], [rate]))), { unused: true });
    const held = permitOf(await gate.acquire(spec([], [rate])));
    expect((await gate.acquire(spec([], [rate]))).ok).toBe(false);
    await gate.release(held, { unused: true });
    await expect.poll(() => heard, { timeout: 5000 }).toEqual([["rate_given_back"]]);
    await unsubscribe();
  });

  it("tells listeners when an expired holder of a full limit is dropped", async () => {
    const dead = newGate(300);
    // A live holder keeps the key; once the last holder lapses the key itself expires, silently.
    // Its lease is long enough that a loaded machine's late timers cannot lapse it too.
    const live = newGate(10_000);
    const heard: string[][] = [];
    const unsubscribe = await gate.onFreed((keys) => heard.push(keys));
    permitOf(await dead.acquire(spec([sem("expiring", 2)])));
    permitOf(await live.acquire(spec([sem("expiring", 2)])));
    expect((await gate.acquire(spec([sem("expiring", 2)]))).ok).toBe(false);
    await sleep(400);
    permitOf(await gate.acquire(spec([sem("expiring", 2)])));
    await expect.poll(() => heard, { timeout: 5000 }).toEqual([["expiring"]]);
    await unsubscribe();
  });

  it("close releases every permit still held", async () => {
    const closing = newGate();
    permitOf(await closing.acquire(spec([sem("closing", 3, 2)])));
    permitOf(await closing.acquire(spec([sem("closing", 3, 1)])));
    await closing.close();
    expect((await gate.usage(["closing"])).get("closing")).toBe(0);
  });

  it("keeps each semaphore's held weight in a count that always matches its holders", async () => {
    const redis = new Redis(env.redis);
    connections.push(redis);
    const key = `${env.prefix}:limits:sem:counted`;
    const count = `${key}:used`;
    const live = newGate();
    const dying = newGate(150);
    const held: { gate: LimitGate; permit: Permit }[] = [];
    let seed = 7;
    const random = () => {
      seed = (seed * 16807) % 2147483647;
      return seed / 2147483647;
    };
    const weightHeld = async () => (await redis.zrange(key, 0, -1)).reduce((sum, m) => sum + Number(m.split(":")[0]), 0);
    const check = async () => {
      for (let look = 1; ; look++) {
        const used = (await live.usage(["counted"])).get("counted");
        const weight = await weightHeld();
        const counted = Number((await redis.get(count)) ?? 0);
        // A holder of `dying` (150 ms leases) may lapse between these reads on a loaded machine, and
        // Redis then expires the semaphore with its count; the next look's usage drops it, so a
        // count that really drifted still fails every look.
        if ((used === weight && counted === used) || look === 3) {
          expect(used).toBe(weight);
          expect(counted).toBe(used);
          return;
        }
      }
    };
    let lapsed = 0;
    let recounted = 0;
    for (let step = 0; step < 200; step++) {
      const roll = random();
      if (roll < 0.45) {
        const g = random() < 0.25 ? dying : live;
        const result = await g.acquire(spec([sem("counted", 12, 1 + Math.floor(random() * 3))]));
        if (result.ok) held.push({ gate: g, permit: result.permit });
      } else if (roll < 0.8 && held.length > 0) {
        const [h] = held.splice(Math.floor(random() * held.length), 1);
        await h!.gate.release(h!.permit);
      } else if (roll < 0.9) {
        // A semaphore written before the count existed, or a count Redis lost.
        await redis.del(count);
        recounted++;
      } else {
        await sleep(200);
        await live.renew();
        await check();
        // Holders that stalled past their lease come back, next to a count that is missing.
        await redis.del(count);
        lapsed += (await dying.renew()).length;
      }
      await check();
    }
    expect(lapsed).toBeGreaterThan(0);
    expect(recounted).toBeGreaterThan(0);
  });

  it("two gates on two connections never hold more than the capacity (200 starts)", async () => {
    const pair = [newGate(), newGate()];
    let running = 0;
    let peak = 0;
    let acquisitions = 0;
    let blocks = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: 200 }, async (_, i) => {
        const g = pair[i % 2]!;
        const weight = 1 + (i % 2);
        for (;;) {
          const result = await g.acquire(spec([sem("contended", 3, weight)]));
          if (!result.ok) {
            blocks++;
            await sleep(1 + Math.random() * 4);
            continue;
          }
          running += weight;
          peak = Math.max(peak, running);
          acquisitions++;
          await sleep(Math.random() * 3);
          running -= weight;
          await g.release(result.permit);
          return;
        }
      }),
    );
    console.log(`200 contended starts: ${Math.round(performance.now() - started)} ms, ${blocks} blocked attempts, peak ${peak}/3`);
    expect(acquisitions).toBe(200);
    expect(peak).toBeLessThanOrEqual(3);
    expect(peak).toBe(3);
    expect((await pair[0]!.usage(["contended"])).get("contended")).toBe(0);
  });

  it("a process on an older config version than another's catches up before it decides, and takes nothing meanwhile", async () => {
    const capacityIn = (version: number) => (version >= 2 ? 3 : 1);
    const processOn = (reaches: number) => {
      const state = { version: 1, catchUps: 0 };
      const gate = newGate(undefined, {
        version: () => state.version,
        catchUp: async () => {
          state.catchUps++;
          state.version = reaches;
        },
      });
      return { state, gate, spec: () => spec([sem("live", capacityIn(state.version))]) };
    };
    const newer = processOn(2);
    newer.state.version = 2;
    await markConfigVersion(connections[0]!, env.prefix, 2);
    permitOf(await newer.gate.acquire(newer.spec()));

    const behind = processOn(2);
    expect(await behind.gate.acquire(behind.spec())).toEqual({ ok: false, blocked: { kind: "stale", version: 2 } });
    expect(behind.state.catchUps).toBe(1);
    expect((await gate.usage(["live"])).get("live")).toBe(1);
    // Built again from the version it caught up to: the raised limit has room.
    permitOf(await behind.gate.acquire(behind.spec()));

    // One that cannot apply the newest version (its code cannot read it) asks once, then goes by its own limits.
    const stuck = processOn(1);
    expect((await stuck.gate.acquire(stuck.spec())).ok).toBe(false);
    const refused = await stuck.gate.acquire(stuck.spec());
    expect(refused).toMatchObject({ ok: false, blocked: { kind: "semaphore", used: 2, capacity: 1 } });
    expect(stuck.state.catchUps).toBe(1);

    // A gate with no config to follow is never stale; the mark only ever rises.
    permitOf(await gate.acquire(spec([sem("live", 3)])));
    await markConfigVersion(connections[0]!, env.prefix, 1);
    expect(await connections[0]!.get(configVersionKey(env.prefix))).toBe("2");
    expect(describeBlocked({ kind: "stale", version: 2 })).toBe("config v2 reaching this process");
  });

  it("describes what blocks a start", () => {
    const one = { kind: "semaphore", weight: 1, kept: 0, woken: [] } as const;
    expect(describeBlocked({ ...one, label: "pool core_db", key: "pool:core_db", used: 25, capacity: 25 })).toBe("pool core_db (25/25)");
    expect(describeBlocked({ ...one, label: "concurrency", key: "t", used: 2, capacity: 2 })).toBe("concurrency 2/2");
    expect(describeBlocked({ ...one, label: "max_concurrency", key: "c", used: 4, capacity: 4 })).toBe("max_concurrency 4/4");
    expect(describeBlocked({ ...one, label: "concurrency key user_42", key: "k", used: 1, capacity: 1 })).toBe(
      "concurrency key user_42 (1/1)",
    );
    expect(describeBlocked({ ...one, label: "concurrency", key: "t", used: 1, capacity: 3, weight: 3 })).toBe("concurrency (1/3, needs 3)");
    const rate = { kind: "rate", label: "rate limit", key: "r", max: 5, retryInMs: 10 } as const;
    expect(describeBlocked({ ...rate, perMs: 1000 })).toBe("rate limit 5 per 1s");
    expect(describeBlocked({ ...rate, perMs: 90_000 })).toBe("rate limit 5 per 90s");
    expect(describeBlocked({ ...rate, perMs: 3_600_000 })).toBe("rate limit 5 per 1h");
    expect(describeBlocked({ ...rate, perMs: 1500 })).toBe("rate limit 5 per 1500ms");
  });
});
