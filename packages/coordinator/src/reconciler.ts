import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { DEFAULT_LEASE_MS, DEFAULT_RECONCILE_INTERVAL_MS, DEFAULT_STALE_MS, DEFAULT_UNKNOWN_TASK_GRACE_MS } from "@ax/common";
import { nodesToRequeue, type Db, type ReconcileCursor, type RequeueCandidate, type RequeuePage } from "@ax/store";
import type { Logger } from "pino";
import { enqueueNodes, jobsMissingFromRedis } from "./enqueue.js";
import { nodeJobId, type QueueRegistry } from "./queues.js";
import { RepeatedErrors } from "./repeated-errors.js";
import { SeenJobs } from "./seen-jobs.js";
import { failUnservedNodes, type FailurePolicies } from "./unserved.js";
import { OtherPrefixWorkers } from "./other-prefix-workers.js";

const PAGE_LOCK_TRIES = 50;
const PAGE_LOCK_PAUSE_MS = 20;

export interface ReconcilerOptions {
  /** @defaultValue 5000 */
  intervalMs?: number;
  /** How long a node may sit `queued` in PostgreSQL before the reconciler re-adds its job. @defaultValue 10000 */
  staleMs?: number;
  /** Running attempts whose worker missed heartbeats this long are handed back. @defaultValue 5000, the worker's own lease */
  leaseMs?: number;
  /** Candidates read from PostgreSQL per page; a pass reads every page. @defaultValue 5000 */
  batch?: number;
  /** A job found in Redis is not looked for again for this long (unless Redis lost its data). @defaultValue 60000 */
  recheckMs?: number;
  /** At most this many found jobs are remembered; older ones are simply checked again. @defaultValue 100000 */
  remember?: number;
  /**
   * A node due this long with no live worker defining its task in its queue (a rolling deploy that
   * dropped the task) fails with `AxUnknownTaskError`. @defaultValue 600000 (10 min)
   */
  unknownTaskGraceMs?: number;
}

/** What one pass did. */
export interface ReconcilePass {
  /** Pages read from PostgreSQL. */
  pages: number;
  /** Nodes PostgreSQL says belong in Redis. */
  candidates: number;
  /** Of those, looked up in Redis (the rest were found there on a recent pass). */
  checked: number;
  /** Jobs (re-)added because Redis did not have them. */
  requeued: number;
}

/**
 * Rebuilds the hot queue from PostgreSQL: re-adds jobs for nodes that should be in Redis
 * (including after a FLUSHALL) and for attempts whose worker died. One pass at a time cluster-wide.
 */
export class Reconciler {
  private timer: NodeJS.Timeout | undefined;
  private pass: Promise<unknown> | undefined;
  private running = false;
  private readonly seen: SeenJobs;
  /** The value of the Redis marker when `seen` was filled; a different one means Redis lost its data. */
  private epoch: string | undefined;
  /** The last completed pass. */
  lastPass: ReconcilePass | undefined;

  private readonly errors: RepeatedErrors;
  private readonly prefixes: OtherPrefixWorkers;

  constructor(
    private readonly db: Db,
    private readonly queues: QueueRegistry,
    private readonly log: Logger,
    /** How the failure of a node no live worker serves counts (see failUnservedNodes). */
    private readonly failurePolicies: FailurePolicies,
    private readonly options: ReconcilerOptions = {},
  ) {
    this.seen = new SeenJobs(options.recheckMs ?? 60_000, options.remember ?? 100_000);
    this.errors = new RepeatedErrors(log);
    this.prefixes = new OtherPrefixWorkers(db, queues.prefix, log);
  }

  start(): void {
    this.running = true;
    // Jobs dispatched while Redis was away are owed as soon as it is back, not an interval later.
    this.queues.connection.on("ready", this.onRedisReady);
    this.schedule(this.options.intervalMs ?? DEFAULT_RECONCILE_INTERVAL_MS);
  }

  /** One pass; returns how many jobs were (re-)added. */
  async runOnce(): Promise<number> {
    return (await this.runPass()).requeued;
  }

  /** One pass over every candidate, oldest first, a page at a time. */
  async runPass(): Promise<ReconcilePass> {
    const stats: ReconcilePass = { pages: 0, candidates: 0, checked: 0, requeued: 0 };
    await this.forgetIfRedisWasLost();
    const limit = this.options.batch ?? 5000;
    let after: ReconcileCursor | undefined;
    do {
      const page = await this.readPage(limit, after);
      if (!page) break;
      stats.pages += 1;
      stats.candidates += page.nodes.length;
      const unchecked = page.nodes.filter((n) => !rememberable(n) || !this.seen.has(seenKey(n)));
      stats.checked += unchecked.length;
      const missing = new Set(await jobsMissingFromRedis(this.queues, unchecked));
      if (missing.size > 0) await enqueueNodes(this.queues, [...missing]);
      stats.requeued += missing.size;
      for (const n of unchecked) if (rememberable(n)) this.seen.add(seenKey(n));
      after = page.next;
    } while (after);
    if (stats.requeued > 0) this.log.info({ requeued: stats.requeued }, "reconciler re-added jobs missing from Redis");
    const window = {
      graceMs: this.options.unknownTaskGraceMs ?? DEFAULT_UNKNOWN_TASK_GRACE_MS,
      leaseMs: this.options.leaseMs ?? DEFAULT_LEASE_MS,
    };
    await failUnservedNodes(this.db, this.queues, window, this.log, this.failurePolicies);
    await this.prefixes.check();
    this.lastPass = stats;
    return stats;
  }

  /**
   * Stops the timer and waits for a pass in progress, at most `timeoutMs`: a pass only re-adds
   * jobs with deterministic ids, so one left behind (Redis or PostgreSQL unreachable) is harmless
   * and ends when the connections close.
   */
  async stop(timeoutMs = 5000): Promise<void> {
    this.running = false;
    this.queues.connection.off("ready", this.onRedisReady);
    clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.pass) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.pass, new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
    clearTimeout(timer);
  }

  /**
   * The page after `after`. Undefined when another coordinator is reconciling: at the start of a
   * pass that means "skip this one"; between pages it is only reading its own page, so wait a
   * moment rather than leave the rest of the candidates unread.
   */
  private async readPage(limit: number, after: ReconcileCursor | undefined): Promise<RequeuePage | undefined> {
    const window = { staleMs: this.options.staleMs ?? DEFAULT_STALE_MS, leaseMs: this.options.leaseMs ?? DEFAULT_LEASE_MS, limit, after };
    for (let tries = 0; ; tries++) {
      const page = await nodesToRequeue(this.db, window);
      if (page || !after || tries >= PAGE_LOCK_TRIES) return page;
      await sleep(PAGE_LOCK_PAUSE_MS);
    }
  }

  private schedule(delayMs: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.tick(), delayMs);
  }

  private tick(): void {
    this.timer = undefined;
    this.pass = this.runPass()
      .catch((error: unknown) => this.errors.warn(error, {}, "reconcile pass failed; will retry"))
      .finally(() => {
        this.pass = undefined;
        if (this.running) this.schedule(this.options.intervalMs ?? DEFAULT_RECONCILE_INTERVAL_MS);
      });
  }

  private readonly onRedisReady = (): void => {
    if (this.running && !this.pass) this.schedule(0);
  };

  /**
   * A marker key lives in Redis next to the queues (set once, shared by every coordinator): when
   * it is gone or changed, Redis was flushed or restarted empty, and every job seen there before
   * must be looked for again.
   */
  private async forgetIfRedisWasLost(): Promise<void> {
    const redis = this.queues.connection;
    const key = `${this.queues.prefix}:reconciler:epoch`;
    await redis.set(key, randomUUID(), "NX");
    const epoch = await redis.get(key);
    if (epoch === null || epoch !== this.epoch) {
      if (this.epoch !== undefined) {
        this.log.warn(
          { prefix: this.queues.prefix },
          "Redis lost its data since the last pass (a restart without persistence, a flush or an eviction); re-adding the jobs PostgreSQL says are owed",
        );
      }
      this.seen.clear();
      this.epoch = epoch ?? undefined;
    }
  }
}

/**
 * A running node under a lost worker is always looked up: its job is locked by the dead worker,
 * and BullMQ may fail and remove it (stalled too often) at any moment, which must be noticed on
 * the next pass. Such nodes are few.
 */
function rememberable(node: RequeueCandidate): boolean {
  return node.status !== "running";
}

function seenKey(node: RequeueCandidate): string {
  return `${nodeJobId(node.runId, node.nodeKey, node.attempt)}:${node.status}`;
}
