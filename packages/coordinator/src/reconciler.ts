import { nodesToRequeue, type Db } from "@ax/store";
import type { Logger } from "pino";
import { enqueueNodes, jobsMissingFromRedis } from "./enqueue.js";
import type { QueueRegistry } from "./queues.js";

export interface ReconcilerOptions {
  /** @defaultValue 5000 */
  intervalMs?: number;
  /** How long a node may sit `queued` in PostgreSQL before the reconciler re-adds its job. @defaultValue 10000 */
  staleMs?: number;
  /** Running attempts whose worker missed heartbeats this long are handed back. @defaultValue 15000 */
  leaseMs?: number;
  /** @defaultValue 5000 */
  batch?: number;
}

/**
 * Rebuilds the hot queue from PostgreSQL: re-adds jobs for nodes that should be in Redis
 * (including after a FLUSHALL) and for attempts whose worker died. One pass at a time cluster-wide.
 */
export class Reconciler {
  private timer: NodeJS.Timeout | undefined;
  private pass: Promise<number> | undefined;

  constructor(
    private readonly db: Db,
    private readonly queues: QueueRegistry,
    private readonly log: Logger,
    private readonly options: ReconcilerOptions = {},
  ) {}

  start(): void {
    const interval = this.options.intervalMs ?? 5000;
    const tick = () => {
      this.pass = this.runOnce().catch((error) => {
        this.log.warn({ err: error }, "reconcile pass failed; will retry");
        return 0;
      });
      void this.pass.finally(() => {
        if (this.timer) this.timer = setTimeout(tick, interval);
      });
    };
    this.timer = setTimeout(tick, interval);
  }

  /** One pass; returns how many jobs were (re-)added. */
  async runOnce(): Promise<number> {
    const nodes = await nodesToRequeue(this.db, {
      staleMs: this.options.staleMs ?? 10_000,
      leaseMs: this.options.leaseMs ?? 15_000,
      limit: this.options.batch ?? 5000,
    });
    if (!nodes?.length) return 0;
    const missing = await jobsMissingFromRedis(this.queues, nodes);
    if (missing.length === 0) return 0;
    await enqueueNodes(this.queues, missing);
    this.log.info({ requeued: missing.length }, "reconciler re-added jobs missing from Redis");
    return missing.length;
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.pass;
  }
}
