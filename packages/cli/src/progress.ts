/**
 * The ETA of a progress bar, at the average rate since it started. cli-progress's own ETA reads
 * "0s" before the first update and "NFs" (an infinity) while nothing has been done yet.
 */
export class Eta {
  private readonly startedAt = Date.now();

  constructor(private readonly startValue: number) {}

  /** "–" until something was done, else the time left, e.g. "45s", "3m07s", "2h05m". */
  text(value: number, total: number): string {
    const done = value - this.startValue;
    if (done <= 0) return "–";
    const seconds = Math.ceil(((total - value) * (Date.now() - this.startedAt)) / done / 1000);
    if (seconds < 60) return `${seconds}s`;
    const pad = (n: number) => String(n).padStart(2, "0");
    if (seconds < 3600) return `${Math.floor(seconds / 60)}m${pad(seconds % 60)}s`;
    return `${Math.floor(seconds / 3600)}h${pad(Math.floor((seconds % 3600) / 60))}m`;
  }
}

/**
 * Says so on the bar when a backfill has runs waiting but none running and none ending for a
 * while: admission needs a coordinator, and a released run needs a worker serving its tasks; the
 * CLI cannot see either, only that nothing moves.
 */
export class Stall {
  private seen = "";
  private since: number;

  constructor(
    private readonly afterMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.since = now();
  }

  text(progress: { done: number; running: number; waiting: number }): string {
    const seen = `${progress.done}/${progress.running}`;
    if (seen !== this.seen) {
      this.seen = seen;
      this.since = this.now();
    }
    if (progress.running > 0 || progress.waiting === 0 || this.now() - this.since < this.afterMs) return "";
    return ` | nothing started for ${Math.round((this.now() - this.since) / 1000)}s: is a coordinator running, and a worker for the flow's tasks?`;
  }
}
