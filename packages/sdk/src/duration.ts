import ms from "ms";
import { z } from "zod";

/** Seconds when a number; otherwise a string such as "500ms", "10s", "5m", "1h", "90d". */
export type Duration = number | string;

export function parseDuration(value: Duration): number {
  if (typeof value === "number") {
    if (!Number.isFinite(value) || value < 0) throw new Error(`duration ${value} must be a non-negative number of seconds`);
    return Math.round(value * 1000);
  }
  const parsed = ms(value as ms.StringValue);
  if (typeof parsed !== "number" || !Number.isFinite(parsed) || parsed < 0) {
    throw new Error(`"${value}" is not a duration; write seconds as a number or a string like "500ms", "10s", "5m", "1h"`);
  }
  return parsed;
}

/** zod: a duration in, milliseconds out. */
export const durationMs = z.union([z.number(), z.string()]).transform((value, ctx) => {
  try {
    return parseDuration(value);
  } catch (error) {
    ctx.addIssue({ code: "custom", message: (error as Error).message });
    return z.NEVER;
  }
});
