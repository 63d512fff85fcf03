/** A rerun of a run that has not finished. */
export class AxRunNotFinishedError extends Error {
  override name = "AxRunNotFinishedError";
  readonly statusCode = 409;
  constructor(readonly runId: string, readonly status: string) {
    super(`run ${runId} is still ${status}: cancel it first (ax cancel ${runId}) or wait for it to finish, then rerun it`);
  }
}

/** `from` names no node of the run's flow version. */
export class AxUnknownNodeError extends Error {
  override name = "AxUnknownNodeError";
  readonly statusCode = 400;
  constructor(readonly runId: string, readonly nodeKey: string, known: string[]) {
    super(`run ${runId} has no node "${nodeKey}" (its nodes: ${known.join(", ")}); pass one of those as from`);
  }
}

/** `only: "failed"` on a run where nothing failed, was skipped or cancelled. */
export class AxNothingToRerunError extends Error {
  override name = "AxNothingToRerunError";
  readonly statusCode = 409;
  constructor(readonly runId: string) {
    super(`run ${runId} has no failed, skipped or cancelled node to rerun; use only: "all" or from: <node> to run nodes again`);
  }
}

/** The run's flow version needs a task this deployment no longer defines. */
export class AxTaskUnavailableError extends Error {
  override name = "AxTaskUnavailableError";
  readonly statusCode = 409;
  constructor(readonly runId: string, readonly task: string, flowVersion: number) {
    super(
      `run ${runId} used version ${flowVersion} of its flow, whose task "${task}" this deployment no longer defines; ` +
        `deploy a worker that defines it, or trigger the flow's current version instead`,
    );
  }
}
