import { heartbeatWorker, removeDeadWorkers, type Db, type WorkerIdentity } from "@ax/store";
import type { Logger } from "pino";

/** How often a worker looks for long-dead workers' rows to delete. */
const PURGE_EVERY_MS = 60_000;

/**
 * This worker's lease in PostgreSQL, renewed on its own small pool (`Store.leases`). A renewal
 * still waiting is not doubled: a slow database gets one statement, not a queue of them. Along
 * the way it deletes the rows of workers dead longer than `retentionMs`.
 */
export class WorkerLease {
  private renewing = false;
  private lastPurge = 0;
  private serverStartedAt: number | undefined;

  constructor(
    private readonly db: Db,
    private readonly identity: WorkerIdentity,
    private readonly retentionMs: number,
    private readonly log: Logger,
  ) {}

  /** Renews the lease; true when the database server restarted since the previous renewal. */
  async renew(): Promise<boolean> {
    if (this.renewing) return false;
    this.renewing = true;
    let restarted = false;
    try {
      const { serverStartedAt } = await heartbeatWorker(this.db, this.identity);
      const startedAt = serverStartedAt.getTime();
      restarted = this.serverStartedAt !== undefined && this.serverStartedAt !== startedAt;
      this.serverStartedAt = startedAt;
    } finally {
      this.renewing = false;
    }
    if (Date.now() - this.lastPurge >= PURGE_EVERY_MS) {
      this.lastPurge = Date.now();
      const removed = await removeDeadWorkers(this.db, this.retentionMs);
      if (removed > 0) this.log.info({ removed }, "deleted the rows of workers dead longer than the retention");
    }
    return restarted;
  }
}
