import { setSchedulePaused, toStorableText, type Db } from "@ax/store";

/** The flow has no stored schedule (never scheduled, or its schedule was removed from code). */
export class AxScheduleNotFoundError extends Error {
  override name = "AxScheduleNotFoundError";
  constructor(readonly flow: string) {
    super(`flow "${flow}" has no schedule; list scheduled flows with \`ax schedules\` (a schedule is registered when a coordinator defining it starts)`);
  }
}

/** A tick could not make its run: the flow has no stored version (no coordinator defining it has started). */
export class AxScheduledRunError extends Error {
  override name = "AxScheduledRunError";
  constructor(
    readonly flow: string,
    readonly logicalDate: Date,
    why: string,
  ) {
    super(`the tick ${logicalDate.toISOString()} of flow "${flow}" made no run: ${why}`);
  }
}

/** Pauses or resumes a flow's schedule in PostgreSQL: every coordinator sees it at its next tick, and it outlives restarts. */
export async function setPaused(db: Db, flow: string, paused: boolean): Promise<{ flow: string; paused: boolean }> {
  // A name PostgreSQL cannot hold names no schedule; asking would only make it refuse the query.
  const found = toStorableText(flow) === flow && (await setSchedulePaused(db, flow, paused));
  if (!found) throw new AxScheduleNotFoundError(flow);
  return { flow, paused };
}
