import { prune, type PruneResult, type Store } from "@ax/store";
import type { Logger } from "pino";
import { AxPruneBusyError, DEFAULT_RETENTION_INTERVAL_MS } from "@ax/common";

export interface RetentionOptions {
  /** How often a pass runs (one at a time cluster-wide). @defaultValue 3600000 (1 h) */
  intervalMs?: number | undefined;
  /** Runs per transaction. @defaultValue 1000 */
  batch?: number | undefined;
  /** Between transactions, so a long pass leaves PostgreSQL to triggers and attempts. @defaultValue 20 */
  pauseMs?: number | undefined;
}

/**
 * The coordinator's retention job: deletes the history older than the configured retention
 * (read at each pass, so a new config version applies at the next one). Every coordinator runs
 * it; the prune lock lets one pass run at a time and the others skip theirs.
 */
export class RetentionLoop {
  private timer: NodeJS.Timeout | undefined;
  private pass: Promise<unknown> | undefined;
  private readonly abort = new AbortController();

  constructor(
    private readonly store: Pick<Store, "withSession">,
    private readonly retentionMs: () => number,
    private readonly log: Logger,
    private readonly options: RetentionOptions = {},
  ) {}

  start(): void {
    const interval = this.options.intervalMs ?? DEFAULT_RETENTION_INTERVAL_MS;
    const tick = () => {
      this.pass = this.runOnce()
        .catch((err) => this.log.warn({ err }, "retention pass failed; the next one will continue"))
        .finally(() => {
          if (this.timer) this.timer = setTimeout(tick, interval);
        });
    };
    // The first pass waits an interval too: a restart loop must not prune on every start.
    this.timer = setTimeout(tick, interval);
  }

  /** One pass now; undefined when another process is pruning. */
  async runOnce(): Promise<PruneResult | undefined> {
    const cutoff = new Date(Date.now() - this.retentionMs());
    try {
      const result = await prune(this.store, {
        cutoff,
        batch: this.options.batch,
        pauseMs: this.options.pauseMs ?? 20,
        signal: this.abort.signal,
      });
      if (result.runs + result.onceKeys + result.scheduleTicks > 0)
        this.log.info({ ...result, cutoff }, "pruned history older than the retention");
      return result;
    } catch (error) {
      if (error instanceof AxPruneBusyError) return undefined;
      throw error;
    }
  }

  /** Stops between two transactions of a pass under way. */
  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.abort.abort();
    await this.pass;
  }
}
