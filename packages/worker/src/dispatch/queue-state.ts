import type { EventEmitter } from "node:events";
import { Worker } from "bullmq";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import type { RepeatedErrors } from "@ax/coordinator";
import type { NodeJobData } from "@ax/coordinator";
import { LimitBlock } from "./limit-block.js";
import { ReasonPublisher } from "./reason-publisher.js";

/** A task queue this process fetches from. */
export interface ServedQueue {
  /** BullMQ queue name (`group.task`). */
  name: string;
  task: string;
}

export interface QueueState extends ServedQueue {
  worker: Worker<NodeJobData>;
  /** Found empty: not looked at or fetched again before this, unless a marker or a wake message announces jobs. */
  idleUntil: number;
  /** A limit is reached: not fetched again until the block lifts. */
  block: LimitBlock;
  reason: ReasonPublisher;
  /** Markers and wake messages seen, so a fetch that found nothing can tell whether jobs arrived meanwhile. */
  wakes: number;
  /** Its task had limits at the last fetch. */
  limited: boolean;
  /**
   * Fetches at once from this queue. A limited queue's is the room the gate last said its limits
   * had, so fetchers do not stampede a full limit. An unlimited queue's follows its jobs: a marker
   * or a wake message raises it by the jobs announced, fetches that keep finding jobs double it
   * (`found`), one that finds nothing drops it to 1. Without it, every wake sent every idle fetcher
   * to Redis for one job.
   */
  fetchWidth: number;
  fetching: number;
  /** Fetches in a row that found a job, since the queue was last found empty. */
  finds: number;
  /** `wakes` when a fetch last found the queue empty, -1 once one found a job: equal to `wakes`, no job is known to wait. */
  emptyAtWakes: number;
  /**
   * When the earliest delayed job (a retry, a delayed run) announced to this process falls due,
   * epoch ms; 0 for none. A fetch that finds the queue empty before then must not put the next
   * look off past it: the marker that announced the job is taken already.
   */
  dueAt: number;
}

/** What opening a queue uses of `DispatcherOptions`. */
export interface QueueOptions {
  connection: Redis;
  prefix: string;
  lockDurationMs: number;
  stalledIntervalMs: number;
  log: Logger;
  /** Where the queues' BullMQ workers report errors, shared so that one outage is not logged once per queue. */
  errors: RepeatedErrors;
}

/** An empty queue is looked at again this often even when no jobs are announced (a marker taken by a busy or dying worker, a lost message). */
export const IDLE_POLL_MS = 1000;

/** Fetches in flight at once, so that a Redis round trip per fetch does not bound throughput. */
export const FETCHERS = 16;

/** A queue's BullMQ worker, without a processor: its jobs are fetched by hand. */
export function openQueue(queue: ServedQueue, o: QueueOptions): QueueState {
  const worker = new Worker<NodeJobData>(queue.name, null, {
    connection: o.connection,
    prefix: o.prefix,
    autorun: false,
    lockDuration: o.lockDurationMs,
    stalledInterval: o.stalledIntervalMs,
    // A stalled job is an attempt whose worker died; the fence decides what happens to it.
    maxStalledCount: 1000,
    // Checked once at start (`checkRedisVersion`), not per queue with plain-text warnings.
    skipVersionCheck: true,
    // As for the producers' queues (QueueRegistry): a wait for "ready" on the shared connection
    // rejects unhandled when a stop closes that connection mid-connect.
    skipWaitingForReady: true,
  });
  worker.on("error", (err) => o.errors.warn(err, { queue: queue.name }, "BullMQ worker error"));
  // BullMQ closes the worker's own blocking connection without settling a connect still in flight
  // (Redis down at stop). When that connect fails, it is re-emitted as "error" on a connection
  // whose listeners the close removed: an unhandled rejection. A listener added once closed takes it.
  worker.once("closed", () => (Reflect.get(worker, "blockingConnection") as EventEmitter).on("error", () => undefined));
  return {
    ...queue,
    worker,
    idleUntil: 0,
    block: new LimitBlock(),
    reason: new ReasonPublisher(o.connection, o.prefix, queue.name, o.log),
    wakes: 0,
    limited: false,
    // A backlog may be waiting already: the first fetches go wide, and the width follows what they find.
    fetchWidth: FETCHERS,
    fetching: 0,
    finds: 0,
    emptyAtWakes: -1,
    dueAt: 0,
  };
}

/** May have work, is not held by a limit, and has room for one more fetch. */
export function isReady(state: QueueState, now: number): boolean {
  return state.idleUntil <= now && !state.block.blocks(now) && state.fetching < state.fetchWidth;
}

/**
 * Found empty with nothing announced since (no marker, no wake message, no delayed job known to be
 * due): its next poll is a look (`lookAtQueues`), not a fetch.
 */
export function onlyALook(state: QueueState, now: number): boolean {
  return state.emptyAtWakes === state.wakes && (state.dueAt === 0 || state.dueAt > now);
}

/**
 * How long fetchers with no ready queue sleep: until the soonest queue may be ready, at most
 * `IDLE_POLL_MS`. A queue that has all the fetches its width allows is left out: the end of one
 * of them wakes the fetchers.
 */
export function sleepMs(states: readonly QueueState[]): number {
  const now = Date.now();
  const waiting = states.filter((s) => s.fetching < s.fetchWidth);
  const soonest = Math.min(...waiting.map((s) => Math.max(s.idleUntil, s.block.blockedUntil)), now + IDLE_POLL_MS);
  return Math.max(1, soonest - now);
}

/**
 * A fetch found a job. For an unlimited queue, the second in a row shows a backlog, so from then
 * on each find lets twice as many fetches go. After the first, the queue waits for its marker
 * instead: BullMQ has just set it again, and its taker (this process or another) takes the next
 * look. Fetching on at once, a job triggered alone cost one more fetch that found nothing.
 * `announcedMeanwhile`: this process took a marker while the fetch was in flight, maybe that very
 * one, so the queue does not wait. A limited queue's width is its limits' room; its finds are
 * only counted (see `MarkerWatch`).
 */
export function found(state: QueueState, announcedMeanwhile: boolean): void {
  if (!state.limited) {
    if (state.finds > 0) state.fetchWidth = Math.min(FETCHERS, state.fetchWidth * 2);
    else if (!announcedMeanwhile) {
      // A retry announced as due soon is not given up for the marker: its marker may be gone already.
      const now = Date.now();
      state.idleUntil = state.dueAt > now ? Math.min(now + IDLE_POLL_MS, state.dueAt) : now + IDLE_POLL_MS;
    }
  }
  state.finds++;
  state.emptyAtWakes = -1;
}

/**
 * A fetch that began at `startedAt` found nothing and no jobs were announced meanwhile: poll
 * later, one fetch at a time, but no later than a delayed job falls due. `nextDue` is when BullMQ
 * said its next delayed job falls due, when the fetch asked it. A due time the fetch began after
 * is forgotten: that job was taken, by this process or another.
 */
export function idle(state: QueueState, startedAt: number, nextDue = 0): void {
  const now = Date.now();
  if (nextDue > now) dueBy(state, nextDue);
  if (state.dueAt !== 0 && state.dueAt <= startedAt) state.dueAt = 0;
  state.idleUntil = state.dueAt === 0 ? now + IDLE_POLL_MS : Math.min(now + IDLE_POLL_MS, state.dueAt);
  state.finds = 0;
  state.emptyAtWakes = state.wakes;
  if (!state.limited) state.fetchWidth = 1;
}

/**
 * When the next delayed job of `worker`'s queue falls due (epoch ms; 0 for none), as its last
 * fetch that found nothing answered. BullMQ keeps that answer in a field it does not expose;
 * without it, of retries falling due a millisecond apart, the first one's fetch used up the
 * queue's due time and the rest waited out the poll.
 */
export function nextDelayedDue(worker: Worker<NodeJobData>): number {
  const due = (worker as unknown as { blockUntil?: unknown }).blockUntil;
  return typeof due === "number" ? due : 0;
}

/** A due time already passed is replaced: its job was fetched, or is fetched now whatever comes next. */
function dueBy(state: QueueState, at: number): void {
  state.dueAt = state.dueAt === 0 || state.dueAt <= Date.now() ? at : Math.min(state.dueAt, at);
}

/**
 * Jobs were announced: fetch at once, with as many fetches as jobs beside those already in flight
 * (up to `FETCHERS`), unless a limit sets the width.
 */
export function announced(state: QueueState, jobs: number | undefined, at: number | undefined): void {
  state.wakes++;
  if (at !== undefined && at > Date.now()) dueBy(state, at);
  state.idleUntil = Math.min(state.idleUntil, at ?? 0);
  const wanted = state.fetching + Math.max(1, jobs ?? FETCHERS);
  if (!state.limited) state.fetchWidth = Math.max(state.fetchWidth, Math.min(FETCHERS, wanted));
}
