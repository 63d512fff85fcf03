import { Cron } from "croner";
import type { ScheduleDefinition } from "@ax/store";

/** The part of a schedule that says when it fires. */
export type FireSpec = Pick<ScheduleDefinition, "cron" | "timezone">;

export const DEFAULT_TIMEZONE = "UTC";

/**
 * Why `cron` / `timezone` cannot be a schedule, or undefined when they can. Cron has 5 fields
 * (minute precision) or 6 (seconds first), or is a nickname such as `@daily`.
 */
export function scheduleProblem(
  cron: string,
  timezone: string = DEFAULT_TIMEZONE,
): { field: "cron" | "timezone"; message: string } | undefined {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: timezone });
  } catch {
    return { field: "timezone", message: `unknown time zone "${timezone}": use an IANA name such as "Europe/Berlin" or "UTC"` };
  }
  const fields = cron.trim().split(/\s+/).length;
  if (!cron.trim().startsWith("@") && fields !== 5 && fields !== 6) {
    return { field: "cron", message: `"${cron}" has ${fields} fields: use 5 (minute hour day month weekday) or 6 (second first)` };
  }
  try {
    cronOf({ cron, timezone });
  } catch (error) {
    return { field: "cron", message: `"${cron}" is not a valid cron expression (${(error as Error).message})` };
  }
  return undefined;
}

/** A paused croner job: only used to compute fire times, never to run anything. */
function cronOf(spec: FireSpec): Cron {
  return new Cron(spec.cron, { timezone: spec.timezone, paused: true });
}

/** The next `n` fire times strictly after `after`. */
export function nextFireTimes(spec: FireSpec, after: Date, n: number): Date[] {
  return cronOf(spec).nextRuns(n, after);
}

/**
 * Fire times in (`after`, `until`], oldest first, at most the newest `limit` of them. Counted
 * back from `until`, so a long gap costs `limit` steps, not one per missed tick.
 */
export function fireTimesBetween(spec: FireSpec, after: Date, until: Date, limit: number): Date[] {
  const cron = cronOf(spec);
  // previousRuns excludes its reference: start just past `until` so a tick exactly at `until` counts.
  const newest = cron.previousRuns(limit, new Date(until.getTime() + 1));
  return newest.filter((d) => d.getTime() > after.getTime()).sort((a, b) => a.getTime() - b.getTime());
}
