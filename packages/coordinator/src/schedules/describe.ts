import { listScheduleSummaries, type Db, type ScheduleSummary } from "@ax/store";
import { cronOf, nextFireTimes } from "./fire-times.js";

/** A fire time this long past with no tick recorded for it: no coordinator ticks the flow. */
export const OVERDUE_AFTER_MS = 60_000;

/** A stored schedule as `ax schedules` and `Client.listSchedules()` show it. */
export interface ScheduleInfo extends ScheduleSummary {
  /** The next three fire times after now (while paused, when it would fire). */
  nextFireTimes: Date[];
  /**
   * The first fire time with no tick since, when a fire time a minute or more ago has none (nor
   * any later one) although the schedule was active then: no coordinator with this flow in its
   * entry is ticking it, and has not since this time. Null while paused and while ticks keep up.
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
  if (s.lastTick && s.lastTick.logicalDate.getTime() >= due.getTime()) return null;
  // When the ticks stopped, not the newest miss: the first owed fire time after the last tick.
  const after = Math.max(s.lastTick?.logicalDate.getTime() ?? 0, owedFrom - 1);
  const [first] = cronOf(s).nextRuns(1, new Date(after));
  return first && first.getTime() < due.getTime() ? first : due;
}
