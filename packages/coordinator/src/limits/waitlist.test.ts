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

  const take = async (key: string, jobId: string): Promise<Permit | undefined> => {
    const answer = await gate.acquire(
      { semaphores: [{ key, capacity: 1, weight: 1, label: `concurrency key ${key}` }], rates: [] },
      { park: waitlist.parkRequest("q", jobId, `concurrency key ${key} (1/1)`, true) },
    );
    return answer.ok ? answer.permit : undefined;
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

  it("admits a job without a concurrency key by clearing its parked reason only", async () => {
    await redis.hset(parkedReasonsKey(env.prefix), "job-r", "rate limit key r 1 per 1s");
    await waitlist.admitted("job-r");
    expect(await redis.hget(parkedReasonsKey(env.prefix), "job-r")).toBeNull();
  });
});
