import ms from "ms";

/** Seconds when a number or a string of digits ("60"); otherwise a string such as "500ms", "10s", "5m", "1h", "90d". */
export type Duration = number | string;

/** Node fires a timer set longer than this after 1 ms, so a timeout beyond it would end attempts at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

export function parseDuration(value: Duration): number {
  if (typeof value === "number") {
    const millis = Math.round(value * 1000);
    if (!Number.isFinite(millis) || millis < 0)
      throw new Error(`duration ${value} must be a finite, non-negative number of seconds, or a string like "500ms", "10s", "5m", "1h"`);
    return millis;
  }
  // "60" is what a quoted YAML value or an environment variable holds for 60 s; ms() would read 60 ms.
  if (/^\s*\d+(\.\d+)?\s*$/.test(value)) return parseDuration(Number(value));
  let parsed: number | undefined;
  try {
    parsed = ms(value as ms.StringValue);
  } catch {
    // ms throws for an empty string; it gets the same explanation as any other unreadable text.
    parsed = undefined;
  }
  if (typeof parsed !== "number" || !Number.isFinite(parsed) || parsed < 0) {
    throw new Error(`"${value}" is not a duration; write seconds as a number or a string like "500ms", "10s", "5m", "1h"`);
  }
  return parsed;
}

/**
 * Milliseconds as a reader takes them in: a second's tenths below a minute, then whole units down to the
 * second ("2h 0m 22s"), and from a day down to the minute ("2d 0h 0m"), as 172824.5s says nothing at a glance.
 */
export function elapsed(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  // Chosen after rounding, so 59.96 s reads "1m 0s", not "60.0s".
  if (Math.round(ms / 100) < 600) return `${(ms / 1000).toFixed(1)}s`;
  const seconds = Math.round(ms / 1000);
  const [d, h, m, s] = [Math.floor(seconds / 86_400), Math.floor(seconds / 3600) % 24, Math.floor(seconds / 60) % 60, seconds % 60];
  if (d > 0) return `${d}d ${h}h ${m}m`;
  return h > 0 ? `${h}h ${m}m ${s}s` : `${m}m ${s}s`;
}
