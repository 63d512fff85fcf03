import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { isolate } from "../../../../test/helpers/isolated.js";
import { parkedReasonsKey } from "../wake.js";
import { LimitGate, type Permit } from "./gate.js";
import { Waitlist } from "./waitlist.js";

describe("Waitlist", () => {
  const env = isolate("waitlist");
  const redis = new Redis(env.redis);
  const gate = new LimitGate(redis, env.prefix);
  const waitlist = new Waitlist(redis, env.prefix);
  const holders = (key: string) => redis.hgetall(`${env.prefix}:limits:sem:${key}:holders`);

  afterAll(async () => {
    await gate.close();
    redis.disconnect();
    await env.cleanup();
  });

  const take = async (key: string, jobId: string, { capacity = 1, place = Date.now() } = {}): Promise<Permit | undefined> => {
    const answer = await gate.acquire(
      { semaphores: [{ key, capacity, weight: 1, label: `concurrency key ${key}` }], rates: [] },
      { park: waitlist.parkRequest("q", jobId, `concurrency key ${key} (${capacity}/${capacity})`, true, place) },
    );
    return answer.ok ? answer.permit : undefined;
  };

  /** Jobs 0–2 of `key` hold its 3 slots and jobs 3–5 wait in its line; job i became ready at (i + 1) * 100. */
  const lineUp = async (key: string): Promise<(Permit | undefined)[]> => {
    const held = [];
    for (let i = 0; i < 3; i++) held.push(await take(key, `job-${i}`, { capacity: 3, place: (i + 1) * 100 }));
    for (let i = 3; i < 6; i++) expect(await take(key, `job-${i}`, { capacity: 3, place: (i + 1) * 100 })).toBeUndefined();
    return held;
  };

  it("records an admitted job's holder and clears its parked reason in one step; releasing forgets the holder and wakes the next in line", async () => {
    const first = await take("k1", "job-1");
    expect(first).toBeDefined();
    expect(await take("k1", "job-2")).toBeUndefined();
    expect(await redis.hget(parkedReasonsKey(env.prefix), "job-2")).toBe("concurrency key k1 (1/1)");

    await waitlist.admitted("job-1", { key: "k1", permitId: first!.id, runId: "run-1" });
    expect(await holders("k1")).toEqual({ [first!.id]: "run-1" });

    await gate.release(first!);
    expect(await waitlist.wake("k1", 1, first!.id)).toEqual(["q|job-2"]);
    expect(await holders("k1")).toEqual({});

    const second = await take("k1", "job-2");
    await waitlist.admitted("job-2", { key: "k1", permitId: second!.id, runId: "run-2" });
    expect(await redis.hget(parkedReasonsKey(env.prefix), "job-2")).toBeNull();
    expect(await holders("k1")).toEqual({ [second!.id]: "run-2" });
  });

  it("a line left empty by a wake or a forget leaves no capacity behind; leave and unpark clear parked reasons", async () => {
    const capacity = (key: string) => redis.hget(`${env.prefix}:limits:waiting-capacity`, key);
    const holder = await take("k2", "job-a");
    expect(await take("k2", "job-b")).toBeUndefined();
    expect(await capacity("k2")).toBe("1");
    await gate.release(holder!);
    expect(await waitlist.wake("k2", 1, holder!.id)).toEqual(["q|job-b"]);
    expect(await capacity("k2")).toBeNull();

    const next = await take("k3", "job-c");
    expect(await take("k3", "job-d")).toBeUndefined();
    await gate.release(next!);
    expect(await waitlist.wake("k3", 1, next!.id)).toEqual(["q|job-d"]);
    expect(await take("k3", "job-e")).toBeUndefined();
    expect(await capacity("k3")).toBe("1");
    // job-d's run was cancelled while woken: its claim goes and job-e, the last in line, is woken.
    expect(await waitlist.forget("k3", 1, "q|job-d")).toEqual(["q|job-e"]);
    expect(await capacity("k3")).toBeNull();

    const third = await take("k4", "job-f");
    expect(await take("k4", "job-g")).toBeUndefined();
    await waitlist.leave("k4", "q|job-g");
    expect(await redis.hget(parkedReasonsKey(env.prefix), "job-g")).toBeNull();
    expect(await redis.zcard(`${env.prefix}:limits:sem:k4:line`)).toBe(0);
    await gate.release(third!);

    await redis.hset(parkedReasonsKey(env.prefix), "job-x", "concurrency key k9 (1/1)", "job-y", "concurrency key k9 (1/1)");
    await waitlist.unpark(["job-x", "job-y"]);
    expect(await redis.hmget(parkedReasonsKey(env.prefix), "job-x", "job-y")).toEqual([null, null]);
  });

  it("keeps the line in the order the jobs became ready, whichever reached the gate first", async () => {
    const holder = await take("k5", "job-0", { place: 100 });
    // Two processes' fetches arrived swapped: job-2 asked first, though job-1 was ready before it.
    expect(await take("k5", "job-2", { place: 300 })).toBeUndefined();
    expect(await take("k5", "job-1", { place: 200 })).toBeUndefined();
    expect(await take("k5", "job-3", { place: 400 })).toBeUndefined();
    await gate.release(holder!);
    expect(await waitlist.wake("k5", 1, holder!.id)).toEqual(["q|job-1"]);
  });

  it("puts woken waiters refused after all (their limit lowered meanwhile) back in their own places", async () => {
    const holders = await lineUp("k6");
    await gate.release(holders[0]!);
    expect(await waitlist.wake("k6", 3, holders[0]!.id)).toEqual(["q|job-3"]);
    await gate.release(holders[1]!);
    expect(await waitlist.wake("k6", 3, holders[1]!.id)).toEqual(["q|job-4"]);
    // The limit is lowered to 1 before the woken jobs come back: both are refused, in the order they return.
    expect(await take("k6", "job-3", { capacity: 1, place: 400 })).toBeUndefined();
    expect(await take("k6", "job-4", { capacity: 1, place: 500 })).toBeUndefined();
    expect(await redis.zrange(`${env.prefix}:limits:sem:k6:line`, 0, -1)).toEqual(["q|job-3", "q|job-4", "q|job-5"]);
    await gate.release(holders[2]!);
    expect(await waitlist.wake("k6", 1, holders[2]!.id)).toEqual(["q|job-3"]);
  });

  it("admits woken waiters in their order when their limit is lowered while they travel, whichever arrives last", async () => {
    const held = await lineUp("k7");
    const woken = [];
    for (const permit of held) {
      await gate.release(permit!);
      woken.push(...(await waitlist.wake("k7", 3, permit!.id)));
    }
    expect(woken).toEqual(["q|job-3", "q|job-4", "q|job-5"]);
    // Lowered to 1 while all three travel: job-5 and job-4 yield to job-3's claim, then to job-3 itself.
    expect(await take("k7", "job-5", { capacity: 1, place: 600 })).toBeUndefined();
    expect(await take("k7", "job-4", { capacity: 1, place: 500 })).toBeUndefined();
    const first = await take("k7", "job-3", { capacity: 1, place: 400 });
    expect(first).toBeDefined();
    expect(await redis.zrange(`${env.prefix}:limits:sem:k7:line`, 0, -1)).toEqual(["q|job-4", "q|job-5"]);
    await gate.release(first!);
    expect(await waitlist.wake("k7", 1, first!.id)).toEqual(["q|job-4"]);
    // Arriving first is no longer enough: with job-4 on its way, job-5 is refused even by a free slot.
    expect(await take("k7", "job-5", { capacity: 1, place: 600 })).toBeUndefined();
    expect(await take("k7", "job-4", { capacity: 1, place: 500 })).toBeDefined();
  });

  it("a woken waiter that yields a free slot to one still in the line wakes that one in the same step", async () => {
    const held = [await take("k8", "job-h1", { capacity: 2, place: 100 }), await take("k8", "job-h2", { capacity: 2, place: 200 })];
    expect(await take("k8", "job-c", { capacity: 2, place: 500 })).toBeUndefined();
    await gate.release(held[0]!);
    expect(await waitlist.wake("k8", 2, held[0]!.id)).toEqual(["q|job-c"]);
    // Ready before job-c but fetched late, it meets a limit lowered to 1 and waits in the line.
    expect(await take("k8", "job-l", { capacity: 1, place: 400 })).toBeUndefined();
    await gate.release(held[1]!);
    // job-c's claim holds the only slot, so the release wakes no one.
    expect(await waitlist.wake("k8", 1, held[1]!.id)).toEqual([]);
    const answer = await gate.acquire(
      { semaphores: [{ key: "k8", capacity: 1, weight: 1, label: "concurrency key k8" }], rates: [] },
      { park: waitlist.parkRequest("q", "job-c", "concurrency key k8 (1/1)", true, 500) },
    );
    expect(answer).toMatchObject({ ok: false, blocked: { kind: "semaphore", used: 0, woken: ["q|job-l"] } });
    expect(await redis.zrange(`${env.prefix}:limits:sem:k8:line`, 0, -1)).toEqual(["q|job-c"]);
    expect(await take("k8", "job-l", { capacity: 1, place: 400 })).toBeDefined();
  });

  it("between jobs of one millisecond, the order of their ids decides (run ids sort in the order they were made)", async () => {
    const holder = await take("k11", "job-h", { place: 100 });
    expect(await take("k11", "job-b", { place: 200 })).toBeUndefined();
    await gate.release(holder!);
    expect(await waitlist.wake("k11", 1, holder!.id)).toEqual(["q|job-b"]);
    // job-c comes after job-b: it yields to job-b's claim and waits in the line.
    expect(await take("k11", "job-c", { place: 200 })).toBeUndefined();
    // job-a comes before both, though it reached the gate last: it starts, and job-b waits behind it.
    const first = await take("k11", "job-a", { place: 200 });
    expect(first).toBeDefined();
    expect(await take("k11", "job-b", { place: 200 })).toBeUndefined();
    expect(await redis.zrange(`${env.prefix}:limits:sem:k11:line`, 0, -1)).toEqual(["q|job-b", "q|job-c"]);
    await gate.release(first!);
    expect(await waitlist.wake("k11", 1, first!.id)).toEqual(["q|job-b"]);
  });

  it("admits a waiter whose job came back unwoken when no one is ahead of it, and takes it out of the line", async () => {
    const holder = await take("k9", "job-h", { place: 100 });
    expect(await take("k9", "job-x", { place: 200 })).toBeUndefined();
    // The holder's slot comes free with no wake (it died), and job-x's safety delay ran out.
    await gate.release(holder!);
    expect(await take("k9", "job-x", { place: 200 })).toBeDefined();
    expect(await redis.zcard(`${env.prefix}:limits:sem:k9:line`)).toBe(0);
  });

  it("forgets a woken waiter's place whose claim a process of an earlier version removed alone", async () => {
    // 0.25.8 and older admit a woken waiter by removing its claim from `…:woken` only.
    await redis.zadd(`${env.prefix}:limits:sem:k10:woken-at`, 100, "q|job-old");
    expect(await take("k10", "job-new", { place: 200 })).toBeDefined();
    expect(await redis.zcard(`${env.prefix}:limits:sem:k10:woken-at`)).toBe(0);
  });

  it("admits a job without a concurrency key by clearing its parked reason only", async () => {
    await redis.hset(parkedReasonsKey(env.prefix), "job-r", "rate limit key r 1 per 1s");
    await waitlist.admitted("job-r");
    expect(await redis.hget(parkedReasonsKey(env.prefix), "job-r")).toBeNull();
  });
});
