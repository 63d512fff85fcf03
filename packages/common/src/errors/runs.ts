/** Errors of triggering, reading and waiting for runs. */

/** No run has that id. */
export class AxRunNotFoundError extends Error {
  override name = "AxRunNotFoundError";
  constructor(readonly runId: string) {
    super(`no run with id ${runId}; list runs with \`ax runs\` or client.listRuns()`);
  }
}

/** `waitForRun` gave up before the run finished. */
export class AxWaitTimeoutError extends Error {
  override name = "AxWaitTimeoutError";
  constructor(
    readonly runId: string,
    readonly status: string,
    timeoutMs: number,
  ) {
    super(`run ${runId} is still ${status} after ${timeoutMs} ms; wait longer or inspect it with \`ax run ${runId}\``);
  }
}

/** A trigger named a flow that no runtime has registered. */
export class AxUnknownFlowError extends Error {
  override name = "AxUnknownFlowError";
  constructor(readonly flow: string, known: string[]) {
    super(
      `no flow named "${flow}" is registered` +
        (known.length ? ` (known: ${known.join(", ")})` : "") +
        ". Start a Runtime that defines it (ax dev/worker/coordinator <entry>) before triggering, or check the name.",
    );
  }
}

/** A trigger payload over the cap. */
export class AxPayloadTooLargeError extends Error {
  override name = "AxPayloadTooLargeError";
  constructor(readonly bytes: number, readonly limit: number) {
    super(
      `payload is ${bytes} bytes, over the ${limit}-byte limit. Store the data elsewhere (a table, an object store) and pass its key in the payload.`,
    );
  }
}

/** The run was cancelled while this attempt ran: the abort reason its task's `signal` carries. */
export class AxCancelledError extends Error {
  override name = "AxCancelledError";
  constructor(readonly runId: string) {
    super(`run ${runId} was cancelled; this attempt was stopped and its result, if any, is discarded`);
  }
}
