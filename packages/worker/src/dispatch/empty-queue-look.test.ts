import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { isolate } from "../../../../test/helpers/isolated.js";
import { lookAtQueues } from "./empty-queue-look.js";

/** The look reads BullMQ's own keys and delayed scores; this pins it to the BullMQ version in the lockfile. */
describe("lookAtQueues on real Redis", () => {
  const env = isolate("look");
  const redis = new Redis(env.redis, { maxRetriesPerRequest: null });
  const names = ["look.empty", "look.waiting", "look.prioritized", "look.later", "look.due"];
  const queues = names.map((name) => new Queue(name, { connection: redis, prefix: env.prefix }));
  const [, waiting, prioritized, later, due] = queues as [Queue, Queue, Queue, Queue, Queue];

  afterAll(async () => {
    await Promise.all(queues.map((q) => q.close()));
    redis.disconnect();
    await env.cleanup();
  });

  it("counts waiting and prioritized jobs and delayed ones fallen due, and answers when the next delayed one falls due", async () => {
    await waiting.addBulk([
      { name: "a", data: {} },
      { name: "b", data: {} },
    ]);
    await prioritized.add("p", {}, { priority: 3 });
    const addedAt = Date.now();
    await later.add("l", {}, { delay: 60_000 });
    await due.add("d", {}, { delay: 20 });
    await new Promise((resolve) => setTimeout(resolve, 40));

    const looks = await lookAtQueues(redis, queues, Date.now());

    expect(looks.slice(0, 3)).toEqual([
      { jobs: 0, nextDue: 0 },
      { jobs: 2, nextDue: 0 },
      { jobs: 1, nextDue: 0 },
    ]);
    expect(looks[3]!.jobs).toBe(0);
    expect(looks[3]!.nextDue).toBeGreaterThanOrEqual(addedAt + 60_000);
    expect(looks[3]!.nextDue).toBeLessThanOrEqual(Date.now() + 60_000);
    expect(looks[4]).toEqual({ jobs: 1, nextDue: 0 });
  });

  it("answers nothing for no queues", async () => {
    expect(await lookAtQueues(redis, [], Date.now())).toEqual([]);
  });
});
