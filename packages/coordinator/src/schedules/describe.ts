import { listScheduleSummaries, type Db, type ScheduleSummary } from "@ax/store";
import { nextFireTimes } from "./fire-times.js";

/** A stored schedule as `ax schedules` and `Client.listSchedules()` show it. */
export interface ScheduleInfo extends ScheduleSummary {
  /** The next three fire times after now (while paused, when it would fire). */
  nextFireTimes: Date[];
}

export async function describeSchedules(db: Db, now = new Date()): Promise<ScheduleInfo[]> {
  const summaries = await listScheduleSummaries(db);
  return summaries.map((s) => ({ ...s, nextFireTimes: nextFireTimes(s, now, 3) }));
}
