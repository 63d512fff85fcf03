import type { RunCount } from "@ax/store";

/** A count is kept for this many times as long as it took to read. */
const COST_FACTOR = 50;
/** And never longer than this. */
const MAX_AGE_MS = 5 * 60_000;

/**
 * The finished runs by flow and status for `ax_runs`, read again once they are older than 50 times
 * the last reading took (at most 5 minutes). Counting them scans the whole history, which at 90
 * days of a busy cluster takes seconds, and every API process is scraped every few seconds: a
 * small history is still read at nearly every scrape, a large one costs PostgreSQL at most 2% of
 * its time. Unfinished runs are few and indexed, so they are counted at every scrape.
 */
export class FinishedRunCounts {
  private counts: RunCount[] | undefined;
  private readAt = 0;
  private tookMs = 0;
  private reading: Promise<RunCount[]> | undefined;

  constructor(
    /** Counts the finished runs (a scan of the whole history). */
    private readonly count: () => Promise<RunCount[]>,
    private readonly now: () => number = Date.now,
  ) {}

  read(): Promise<RunCount[]> {
    const age = this.now() - this.readAt;
    if (this.counts && age < Math.min(MAX_AGE_MS, this.tookMs * COST_FACTOR)) return Promise.resolve(this.counts);
    // Scrapes of several Prometheus servers at once share one reading.
    this.reading ??= this.readAgain().finally(() => {
      this.reading = undefined;
    });
    return this.reading;
  }

  private async readAgain(): Promise<RunCount[]> {
    const started = this.now();
    const counts = await this.count();
    this.readAt = this.now();
    this.tookMs = this.readAt - started;
    this.counts = counts;
    return counts;
  }
}
