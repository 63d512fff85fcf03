import type { KeysMap } from "bullmq";
import type { Redis } from "ioredis";

/** What a fetch from a queue would find now: jobs it could take, and when its next delayed job falls due (epoch ms, 0: none). */
export interface QueueLook {
  jobs: number;
  nextDue: number;
}

/**
 * BullMQ scores a delayed job by its due time times 0x1000 plus a counter, so that jobs due in the
 * same millisecond keep their order; its own fetch divides the same way.
 */
const DELAYED_SCORE_UNIT = 0x1000;

/**
 * Reads, in one pipeline for all of `queues` (BullMQ workers or queues), what a fetch from each
 * would find: its waiting and prioritized jobs, and its earliest delayed one (a job due by `now`
 * counts as one a fetch takes, since the fetch promotes it). Three plain reads per queue, where a
 * fetch that finds nothing is a script of about seven commands and a round trip of its own.
 * BullMQ's `getJobCounts` is a script per queue too, and counts delayed jobs due or not.
 */
export async function lookAtQueues(connection: Redis, queues: readonly { keys: KeysMap }[], now: number): Promise<QueueLook[]> {
  const pipeline = connection.pipeline();
  for (const { keys } of queues) pipeline.llen(keys.wait!).zcard(keys.prioritized!).zrange(keys.delayed!, 0, 0, "WITHSCORES");
  const replies = (await pipeline.exec()) ?? [];
  for (const [err] of replies) if (err) throw err;
  return queues.map((_, i) => {
    const [waiting, prioritized, delayed] = replies.slice(i * 3, i * 3 + 3).map(([, reply]) => reply) as [number, number, string[]];
    const due = delayed.length === 2 ? Math.floor(Number(delayed[1]) / DELAYED_SCORE_UNIT) : 0;
    const dueNow = due !== 0 && due <= now;
    return { jobs: waiting + prioritized + (dueNow ? 1 : 0), nextDue: dueNow ? 0 : due };
  });
}
