import { AxNotJsonError } from "@ax/store";

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

/**
 * A trigger payload ax cannot store: not plain JSON, or a string PostgreSQL refuses (NUL, a lone
 * surrogate). Names the JSON path; an AxNotJsonError, so callers catching that still see it.
 */
export class AxPayloadError extends AxNotJsonError {
  override name = "AxPayloadError";
  constructor(refused: AxNotJsonError) {
    super(refused.what, refused.path, refused.problem, refused.advice, refused.verdict);
  }
}
