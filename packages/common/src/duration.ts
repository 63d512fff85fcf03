import ms from "ms";

/** Seconds when a number or a string of digits ("60"); otherwise a string such as "500ms", "10s", "5m", "1h", "90d". */
export type Duration = number | string;

/** Node fires a timer set longer than this after 1 ms, so a timeout beyond it would end attempts at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

export function parseDuration(value: Duration): number {
  if (typeof value === "number") {
    const millis = Math.round(value * 1000);
    if (!Number.isFinite(millis) || millis < 0) throw new Error(`duration ${value} must be a finite, non-negative number of seconds`);
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
