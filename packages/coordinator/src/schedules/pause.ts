import { setSchedulePaused, toStorableText, type Db } from "@ax/store";
import { AxScheduleNotFoundError } from "@ax/common";

/** Pauses or resumes a flow's schedule in PostgreSQL: every coordinator sees it at its next tick, and it outlives restarts. */
export async function setPaused(db: Db, flow: string, paused: boolean): Promise<{ flow: string; paused: boolean }> {
  // A name PostgreSQL cannot hold names no schedule; asking would only make it refuse the query.
  const found = toStorableText(flow) === flow && (await setSchedulePaused(db, flow, paused));
  if (!found) throw new AxScheduleNotFoundError(flow);
  return { flow, paused };
}
