/** Errors of reruns and backfills: what was refused, and what to do instead. */

/** A rerun of a run that has not finished. */
export class AxRunNotFinishedError extends Error {
  override name = "AxRunNotFinishedError";
  readonly statusCode = 409;
  constructor(
    readonly runId: string,
    readonly status: string,
  ) {
    super(`run ${runId} is still ${status}: cancel it first (ax cancel ${runId}) or wait for it to finish, then rerun it`);
  }
}

/** `from` names no node of the run's flow version. */
export class AxUnknownNodeError extends Error {
  override name = "AxUnknownNodeError";
  readonly statusCode = 400;
  constructor(
    readonly runId: string,
    readonly nodeKey: string,
    known: string[],
  ) {
    super(`run ${runId} has no node "${nodeKey}" (its nodes: ${known.join(", ")}); pass one of those as from`);
  }
}

/** `only: "failed"` on a run where nothing failed, was skipped or cancelled. */
export class AxNothingToRerunError extends Error {
  override name = "AxNothingToRerunError";
  readonly statusCode = 409;
  constructor(readonly runId: string) {
    super(
      `run ${runId} has no failed, skipped or cancelled node to rerun; to run nodes again, rerun with --all or --from <node> (ax rerun), or only: "all" or from: "<node>" (API, Client)`,
    );
  }
}

/** The run's flow version needs a task this deployment no longer defines. */
export class AxTaskUnavailableError extends Error {
  override name = "AxTaskUnavailableError";
  readonly statusCode = 409;
  constructor(
    readonly runId: string,
    readonly task: string,
    flowVersion: number,
  ) {
    super(
      `run ${runId} used version ${flowVersion} of its flow, whose task "${task}" this deployment no longer defines; ` +
        `deploy a worker that defines it, or trigger the flow's current version instead`,
    );
  }
}

/** A backfill whose range is empty or reversed. */
export class AxBackfillRangeError extends Error {
  override name = "AxBackfillRangeError";
  readonly statusCode = 400;
  constructor(from: Date, to: Date, future = false) {
    const valid = !Number.isNaN(from.getTime()) && !Number.isNaN(to.getTime());
    super(
      !valid
        ? "backfill from and to must be dates (a Date or an ISO 8601 string such as 2026-01-01T00:00:00Z)"
        : future
          ? `backfill range from ${from.toISOString()} starts after now: ticks still to come are the schedule's to run; backfill past ticks only`
          : `backfill range from ${from.toISOString()} to ${to.toISOString()} is empty: from must be before to (to is exclusive)`,
    );
  }
}

/** Backfill of a flow that has no `schedule`, so no ticks. */
export class AxNoScheduleError extends Error {
  override name = "AxNoScheduleError";
  readonly statusCode = 400;
  constructor(readonly flow: string) {
    super(
      `flow "${flow}" has no schedule, so it has no ticks to backfill; give it a schedule option in code (then restart its coordinators) or flows.${flow}.schedule in runtime.yaml (ax config apply: live)`,
    );
  }
}

/**
 * More ticks than the caller allowed (`maxTicks`; the CLI's limit without --yes), or than any one
 * backfill may have (`ceiling`). Counting stops one tick past the limit, so `ticks` is that count:
 * the range has at least this many.
 */
export class AxTooManyTicksError extends Error {
  override name = "AxTooManyTicksError";
  readonly statusCode = 400;
  constructor(
    readonly flow: string,
    readonly ticks: number,
    readonly limit: number,
    readonly ceiling = false,
  ) {
    super(
      ceiling
        ? `backfill of "${flow}" has more than ${limit} ticks, the most one backfill may have; split the range into several backfills`
        : `backfill of "${flow}" has more than ${limit} ticks; narrow the range, or confirm (ax backfill --yes, or a larger maxTicks)`,
    );
  }
}

/** A backfill range in which the flow's schedule never fires: nothing would run, so nothing is recorded. */
export class AxNoTicksError extends Error {
  override name = "AxNoTicksError";
  readonly statusCode = 400;
  constructor(
    readonly flow: string,
    from: Date,
    to: Date,
    schedule: { cron: string; timezone?: string | undefined },
  ) {
    super(
      `backfill of "${flow}" has no tick from ${from.toISOString()} to ${to.toISOString()}: its cron "${schedule.cron}" (${schedule.timezone ?? "UTC"}) does not fire in that range; widen the range (to is exclusive)`,
    );
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

/** A cancelled backfill's ticks are not retried: its cancel said its remaining work should not run. */
export class AxBackfillCancelledError extends Error {
  override name = "AxBackfillCancelledError";
  readonly statusCode = 409;
  constructor(readonly backfillId: string) {
    super(
      `backfill ${backfillId} was cancelled, so its ticks are not retried; start a new backfill over the same range (it lists the same runs) and retry that one (\`ax backfill retry <new id>\`), or rerun one tick's run with \`ax rerun <run id>\``,
    );
  }
}
