import { cronOf, DEFAULT_TIMEZONE } from "../schedules/fire-times.js";

export type Schedule = string | { cron: string; timezone?: string | undefined };

/** Ticks listed between two turns of the event loop: croner takes tens of µs per tick (hundreds in a zone other than UTC). */
const TICKS_PER_TURN = 1000;

/**
 * The schedule's fire times in [from, to), in order; stops after `limit` (the caller's ceiling).
 * A schedule without a zone fires in UTC, as the tick loop reads it: the process's own zone would
 * make the same backfill run from two machines create different ticks. A long list gives the
 * event loop a turn every thousand ticks, so one request for a huge range cannot freeze a server.
 */
export async function scheduleTicks(schedule: Schedule, from: Date, to: Date, limit: number): Promise<Date[]> {
  const { cron, timezone = DEFAULT_TIMEZONE } = typeof schedule === "string" ? { cron: schedule } : schedule;
  const job = cronOf({ cron, timezone });
  const ticks: Date[] = [];
  // nextRun is strictly after its argument: start just before `from` so a tick at `from` counts.
  let next = job.nextRun(new Date(from.getTime() - 1));
  while (next && next < to && ticks.length < limit) {
    ticks.push(next);
    next = job.nextRun(next);
    if (ticks.length % TICKS_PER_TURN === 0) await new Promise((resolve) => setImmediate(resolve));
  }
  return ticks;
}
