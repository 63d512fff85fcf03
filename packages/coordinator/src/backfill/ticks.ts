import { Cron } from "croner";
import { DEFAULT_TIMEZONE } from "../schedules/fire-times.js";

export type Schedule = string | { cron: string; timezone?: string | undefined };

/**
 * The schedule's fire times in [from, to), in order; stops after `limit` (the caller's ceiling).
 * A schedule without a zone fires in UTC, as the tick loop reads it: the process's own zone would
 * make the same backfill run from two machines create different ticks.
 */
export function scheduleTicks(schedule: Schedule, from: Date, to: Date, limit: number): Date[] {
  const { cron, timezone = DEFAULT_TIMEZONE } = typeof schedule === "string" ? { cron: schedule } : schedule;
  const job = new Cron(cron, { timezone, paused: true });
  const ticks: Date[] = [];
  // nextRun is strictly after its argument: start just before `from` so a tick at `from` counts.
  let next = job.nextRun(new Date(from.getTime() - 1));
  while (next && next < to && ticks.length < limit) {
    ticks.push(next);
    next = job.nextRun(next);
  }
  return ticks;
}
