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
  // An empty cron is the schema's own complaint (a minimum length); counted, it would say "1 fields".
  if (cron === "") return undefined;
  if (cron.trim() === "") return { field: "cron", message: 'is blank: write a cron such as "0 2 * * *"' };
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

/**
 * A paused croner job: only used to compute fire times, never to run anything. A zone that is UTC
 * under any of its names is given as a zero offset: croner converts every step through Intl for a
 * named zone, about ten times slower, which a backfill listing 100,000 ticks pays in full.
 */
export function cronOf(spec: FireSpec): Cron {
  return isUtc(spec.timezone)
    ? new Cron(spec.cron, { utcOffset: 0, paused: true })
    : new Cron(spec.cron, { timezone: spec.timezone, paused: true });
}

function isUtc(timezone: string | undefined): boolean {
  if (timezone === undefined) return false;
  try {
    return new Intl.DateTimeFormat("en-US", { timeZone: timezone }).resolvedOptions().timeZone === "UTC";
  } catch {
    return false;
  }
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
