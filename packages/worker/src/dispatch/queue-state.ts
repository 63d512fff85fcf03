import { Worker } from "bullmq";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
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
  /** Found empty: not fetched again before this, unless a wake message arrives. */
  idleUntil: number;
  /** A limit is reached: not fetched again until the block lifts. */
  block: LimitBlock;
  reason: ReasonPublisher;
  /** Wake messages seen, so a fetch that found nothing can tell whether jobs arrived meanwhile. */
  wakes: number;
  /**
   * Its task had limits at the last fetch: then at most `fetchWidth` fetches at once, as many as
   * the gate last said had room, so fetchers do not stampede a full limit.
   */
  limited: boolean;
  fetchWidth: number;
  fetching: number;
}

/** What opening a queue uses of `DispatcherOptions`. */
export interface QueueOptions {
  connection: Redis;
  prefix: string;
  lockDurationMs: number;
  stalledIntervalMs: number;
  log: Logger;
}

/** An empty queue is fetched again this often even without a wake message (a lost message, a stalled job moved back). */
export const IDLE_POLL_MS = 1000;

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
  });
  worker.on("error", (err) => o.log.warn({ err, queue: queue.name }, "BullMQ worker error"));
  return {
    ...queue,
    worker,
    idleUntil: 0,
    block: new LimitBlock(),
    reason: new ReasonPublisher(o.connection, o.prefix, queue.name, o.log),
    wakes: 0,
    limited: false,
    fetchWidth: 1,
    fetching: 0,
  };
}

/** May have work, is not held by a limit, and has room for one more fetch. */
export function isReady(state: QueueState, now: number): boolean {
  return state.idleUntil <= now && !state.block.blocks(now) && !(state.limited && state.fetching >= state.fetchWidth);
}

/** How long fetchers with no ready queue sleep: until the soonest queue may be ready, at most `IDLE_POLL_MS`. */
export function sleepMs(states: readonly QueueState[]): number {
  const now = Date.now();
  const soonest = Math.min(...states.map((s) => Math.max(s.idleUntil, s.block.blockedUntil)), now + IDLE_POLL_MS);
  return Math.max(1, soonest - now);
}
