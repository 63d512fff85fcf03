import { Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import type { NodeJobData } from "@ax/coordinator";
import { isolate } from "../../../../test/helpers/isolated.js";
import { nextDelayedDue } from "./queue-state.js";

/**
 * `nextDelayedDue` reads an answer BullMQ keeps in a private field; this pins it to the BullMQ
 * version in the lockfile, so an upgrade that renames the field fails here rather than as retries
 * that wait out the poll.
 */
describe("nextDelayedDue on real Redis", () => {
  const env = isolate("next_due");
  const redis = new Redis(env.redis, { maxRetriesPerRequest: null });
  const queue = new Queue("due.t", { connection: redis, prefix: env.prefix });
  const worker = new Worker<NodeJobData>("due.t", null, { connection: redis, prefix: env.prefix, autorun: false });

  afterAll(async () => {
    await worker.close();
    await queue.close();
    redis.disconnect();
    await env.cleanup();
  });

  it("answers when the queue's next delayed job falls due after a fetch that found nothing, and 0 with none", async () => {
    expect(await worker.getNextJob("token-1", { block: false })).toBeUndefined();
    expect(nextDelayedDue(worker)).toBe(0);

    const addedAt = Date.now();
    await queue.add("later", {} as NodeJobData, { delay: 60_000 });
    expect(await worker.getNextJob("token-2", { block: false })).toBeUndefined();
    const due = nextDelayedDue(worker);
    expect(due).toBeGreaterThanOrEqual(addedAt + 60_000);
    expect(due).toBeLessThanOrEqual(Date.now() + 60_000);
  });
});
