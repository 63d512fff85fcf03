/** Errors of cron schedules and their ticks. */

/** The flow has no stored schedule (never scheduled, or its schedule was removed from code). */
export class AxScheduleNotFoundError extends Error {
  override name = "AxScheduleNotFoundError";
  constructor(readonly flow: string) {
    super(
      `flow "${flow}" has no schedule; list scheduled flows with \`ax schedules\` (a schedule is registered when a coordinator defining it starts)`,
    );
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
