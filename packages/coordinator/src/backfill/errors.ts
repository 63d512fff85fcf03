/** A backfill whose range is empty or reversed. */
export class AxBackfillRangeError extends Error {
  override name = "AxBackfillRangeError";
  readonly statusCode = 400;
  constructor(from: Date, to: Date) {
    const valid = !Number.isNaN(from.getTime()) && !Number.isNaN(to.getTime());
    super(
      valid
        ? `backfill range from ${from.toISOString()} to ${to.toISOString()} is empty: from must be before to (to is exclusive)`
        : "backfill from and to must be dates (a Date or an ISO 8601 string such as 2026-01-01T00:00:00Z)",
    );
  }
}

/** Backfill of a flow that has no `schedule`, so no ticks. */
export class AxNoScheduleError extends Error {
  override name = "AxNoScheduleError";
  readonly statusCode = 400;
  constructor(readonly flow: string) {
    super(`flow "${flow}" has no schedule, so it has no ticks to backfill; give it a schedule option (or flows.${flow}.schedule in YAML) and restart its runtime`);
  }
}

/** More ticks than the caller allowed (`maxTicks`; the CLI's limit without --yes). */
export class AxTooManyTicksError extends Error {
  override name = "AxTooManyTicksError";
  readonly statusCode = 400;
  constructor(readonly flow: string, readonly ticks: number, readonly limit: number) {
    super(`backfill of "${flow}" has ${ticks} ticks, over the limit of ${limit}; narrow the range, or confirm (ax backfill --yes, or a larger maxTicks)`);
  }
}

/** No backfill has that id. */
export class AxBackfillNotFoundError extends Error {
  override name = "AxBackfillNotFoundError";
  readonly statusCode = 404;
  constructor(readonly backfillId: string) {
    super(`no backfill with id ${backfillId}; list them with \`ax backfills\` or client.listBackfills()`);
  }
}
