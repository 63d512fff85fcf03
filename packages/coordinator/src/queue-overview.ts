import { DEFAULT_LEASE_MS } from "@ax/common";
import {
  describeFullWorkers,
  describeServedElsewhere,
  knownQueues,
  queuesServedElsewhere,
  servedQueues,
  type Db,
  type ServedElsewhere,
  type ServedQueue,
} from "@ax/store";
import { taskQueueName, type QueueRegistry } from "./queues.js";
import { answeredByRedis } from "./redis.js";
import { Waitlist, type BusyKey } from "./limits/waitlist.js";
import { parkedReasons, waitingReasons } from "./wake.js";

/** One task queue as `ax queues` shows it. */
export interface QueueInfo {
  /** BullMQ queue name: `group.task`. */
  name: string;
  group: string;
  task: string;
  /** Jobs ready to start (prioritised ones included). */
  waiting: number;
  active: number;
  /** Jobs whose start is in the future (retry backoff, a delayed run). */
  delayed: number;
  /**
   * What holds the queue: a limit ("concurrency 2/2", "pool core_db (25/25)"...), or, with jobs
   * waiting, every worker serving it busy ("worker slots 10/10 (1 worker)"), or its workers being
   * on another Redis prefix than the one asked about; null when nothing is.
   */
  limited: string | null;
  /** Live worker processes fetching from it on this Redis prefix. */
  workers: number;
  /** Attempts running in those workers (of any queue they serve), and their slots together (null: a worker older than 0.9 does not say). */
  slots: { running: number; capacity: number | null };
}

/**
 * Every task queue that has work in PostgreSQL or a live worker: the answer to "a task sits
 * queued and never runs" (no workers, or a limit reached).
 */
export async function queueOverview(db: Db, queues: QueueRegistry): Promise<QueueInfo[]> {
  const [inFlight, served, elsewhere] = await Promise.all([
    knownQueues(db),
    servedQueues(db, DEFAULT_LEASE_MS, queues.prefix),
    queuesServedElsewhere(db, DEFAULT_LEASE_MS, queues.prefix),
  ]);
  const names = new Map<string, { group: string; task: string }>();
  for (const q of inFlight) names.set(taskQueueName(q.queue, q.task), { group: q.queue, task: q.task });
  for (const name of [...served.keys(), ...elsewhere.keys()]) {
    const dot = name.indexOf(".");
    if (!names.has(name)) names.set(name, { group: name.slice(0, dot), task: name.slice(dot + 1) });
  }
  const sorted = [...names.keys()].sort();
  return answeredByRedis(queues.connection, countJobs(queues, sorted, names, served, elsewhere), "listing the queues");
}

/** The queues' job counts and what holds each, all read from Redis. */
async function countJobs(
  queues: QueueRegistry,
  sorted: string[],
  names: Map<string, { group: string; task: string }>,
  served: Map<string, ServedQueue>,
  elsewhere: Map<string, ServedElsewhere>,
): Promise<QueueInfo[]> {
  const reasons = await waitingReasons(queues.connection, queues.prefix, sorted);
  return Promise.all(
    sorted.map(async (name) => {
      const counts = await queues.get(name).getJobCounts("waiting", "prioritized", "active", "delayed");
      const waiting = (counts.waiting ?? 0) + (counts.prioritized ?? 0);
      const workers = served.get(name);
      const { group, task } = names.get(name)!;
      const other = workers ? undefined : elsewhere.get(name);
      // Jobs parked by a per-key limit wait in the delayed set, with no reason on the queue itself.
      // A reason outlives the jobs it held by up to its TTL: with nothing waiting, nothing is held.
      const reason = waiting + (counts.delayed ?? 0) > 0 ? reasons.get(name) : undefined;
      const keyed =
        reason !== undefined || !counts.delayed ? undefined : ((await keyedWait(queues, task)) ?? (await rateKeyedWait(queues, name)));
      return {
        name,
        ...names.get(name)!,
        waiting,
        active: counts.active ?? 0,
        delayed: counts.delayed ?? 0,
        limited:
          (other && describeServedElsewhere(group, queues.prefix, other)) ??
          reason ??
          keyed ??
          (workers?.full && waiting > 0 ? describeFullWorkers(workers) : null),
        workers: workers?.workers ?? 0,
        slots: { running: workers?.running ?? 0, capacity: workers ? workers.capacity : 0 },
      };
    }),
  );
}

/** The keys of `task`'s per-key limit that have runs waiting, busiest first (`ax queues --keys`). */
export function busyKeys(queues: QueueRegistry, task: string, limit = 20): Promise<BusyKey[]> {
  return answeredByRedis(
    queues.connection,
    new Waitlist(queues.connection, queues.prefix).busiest(`key:${task}:`, limit),
    "listing the busy keys",
  );
}

/** "concurrency key: 5 runs waiting on 2 keys" when the task's per-key limit parks runs; undefined when none. */
async function keyedWait(queues: QueueRegistry, task: string): Promise<string | undefined> {
  const keys = (await busyKeys(queues, task, 1000)).filter((k) => k.waiting > 0);
  if (keys.length === 0) return undefined;
  const runs = keys.reduce((n, k) => n + k.waiting, 0);
  return `concurrency key: ${runs} run${runs === 1 ? "" : "s"} waiting on ${keys.length} key${keys.length === 1 ? "" : "s"} (ax queues --keys ${task})`;
}

/** Delayed jobs looked at for a per-key rate limit's reasons: enough to name the limit, bounded for a huge delayed set. */
const RATE_SAMPLE = 1000;

/**
 * "rate limit key: 4 runs delayed on 2 keys (rate limit key acme 2 per 1s, …)" when the task's
 * per-key rate limit holds jobs back, read off the reasons of the queue's first delayed jobs;
 * undefined when none waits on one.
 */
async function rateKeyedWait(queues: QueueRegistry, name: string): Promise<string | undefined> {
  const ids = await queues.get(name).getRanges(["delayed"], 0, RATE_SAMPLE - 1, true);
  const byKey = new Map<string, number>();
  for (const reason of (await parkedReasons(queues.connection, queues.prefix, ids)).values()) {
    if (reason.startsWith("rate limit key ")) byKey.set(reason, (byKey.get(reason) ?? 0) + 1);
  }
  if (byKey.size === 0) return undefined;
  const runs = [...byKey.values()].reduce((n, k) => n + k, 0);
  const busiest = [...byKey].sort((a, b) => b[1] - a[1])[0]![0];
  const more = byKey.size > 1 ? ", …" : "";
  return `rate limit key: ${runs}${ids.length === RATE_SAMPLE ? "+" : ""} run${runs === 1 ? "" : "s"} delayed on ${byKey.size} key${byKey.size === 1 ? "" : "s"} (${busiest}${more})`;
}
