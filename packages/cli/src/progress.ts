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
