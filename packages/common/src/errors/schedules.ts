/** Errors of cron schedules and their ticks. */

/** The flow has no stored schedule (never scheduled, or its schedule was removed from code). */
export class AxScheduleNotFoundError extends Error {
  override name = "AxScheduleNotFoundError";
  constructor(readonly flow: string) {
    super(
      `flow "${flow}" has no schedule in force; list scheduled flows with \`ax schedules\` (a schedule comes from the flow's code when a coordinator defining it starts, or from runtime.yaml's flows.${flow}.schedule; one removed from both keeps its pause state for when it returns)`,
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
