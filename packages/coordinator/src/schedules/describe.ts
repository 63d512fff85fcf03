import { listScheduleSummaries, type Db, type ScheduleSummary } from "@ax/store";
import { cronOf, nextFireTimes } from "./fire-times.js";

/** A fire time this long past with no tick recorded for it: no coordinator ticks the flow. */
export const OVERDUE_AFTER_MS = 60_000;

/** A stored schedule as `ax schedules` and `Client.listSchedules()` show it. */
export interface ScheduleInfo extends ScheduleSummary {
  /** The next three fire times after now (while paused, when it would fire). */
  nextFireTimes: Date[];
  /**
   * The newest fire time, a minute or more ago, that has no tick (nor any later one) although the
   * schedule was active then: no coordinator with this flow in its entry is ticking it. Null while
   * paused and while ticks keep up.
   */
  overdueSince: Date | null;
}

export async function describeSchedules(db: Db, now = new Date()): Promise<ScheduleInfo[]> {
  const summaries = await listScheduleSummaries(db);
  return summaries.map((s) => ({ ...s, nextFireTimes: nextFireTimes(s, now, 3), overdueSince: overdueSince(s, now) }));
}

function overdueSince(s: ScheduleSummary, now: Date): Date | null {
  if (s.paused) return null;
  const [due] = cronOf(s).previousRuns(1, new Date(now.getTime() - OVERDUE_AFTER_MS));
  if (!due) return null;
  // Fire times before the schedule was stored or resumed were never owed.
  const owedFrom = Math.max(s.updatedAt.getTime(), s.resumedAt?.getTime() ?? 0);
  if (due.getTime() < owedFrom) return null;
  return s.lastTick && s.lastTick.logicalDate.getTime() >= due.getTime() ? null : due;
}
