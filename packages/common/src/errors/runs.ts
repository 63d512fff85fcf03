/** Errors of triggering, reading and waiting for runs. */

import { DEFAULT_RETENTION_MS } from "../defaults.js";

/** No run has that id: a mistyped id, or a run retention removed, which the message says is not a fault. */
export class AxRunNotFoundError extends Error {
  override name = "AxRunNotFoundError";
  constructor(readonly runId: string) {
    super(
      `no run with id ${runId}; list runs with \`ax runs\` or client.listRuns() (finished runs older than the retention, ` +
        `${DEFAULT_RETENTION_MS / 86_400_000} days unless runtime.yaml sets \`retention\`, are pruned; \`ax prune --archive\` keeps them in runs_archive)`,
    );
  }
}

/** A log query's `node` names no node of the run: a typo would otherwise read as "this node logged nothing". */
export class AxNodeNotFoundError extends Error {
  override name = "AxNodeNotFoundError";
  readonly statusCode = 404;
  constructor(
    readonly runId: string,
    readonly nodeKey: string,
    known: string[],
  ) {
    super(
      `run ${runId} has no node "${nodeKey}"; ` +
        (known.length ? `its nodes: ${known.join(", ")}. Name one of those, or no node for all of them` : "it has no nodes yet"),
    );
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

/** A trigger named a flow that no runtime has registered, or one retired (`ax flow retire`). */
export class AxUnknownFlowError extends Error {
  override name = "AxUnknownFlowError";
  constructor(
    readonly flow: string,
    known: string[],
    /** When the flow was retired; undefined for a name never registered. */
    readonly retiredAt?: Date | undefined,
  ) {
    super(
      retiredAt
        ? `flow "${flow}" was retired at ${retiredAt.toISOString()} (ax flow retire): its runs stay readable, but it takes no new ones. ` +
            "Start a Runtime whose code defines it to bring it back into use."
        : `no flow named "${flow}" is registered` +
            (known.length ? ` (known: ${known.join(", ")})` : "") +
            ". Start a Runtime that defines it (ax dev/worker/coordinator <entry>) before triggering, or check the name.",
    );
  }
}

/** `ax flow retire` refused: something still uses the flow. The message says what, and what to do first. */
export class AxFlowInUseError extends Error {
  override name = "AxFlowInUseError";
  readonly statusCode = 409;
  constructor(
    readonly flow: string,
    why: string,
  ) {
    super(`flow "${flow}" cannot be retired: ${why}`);
  }
}

/** A trigger payload over the cap. */
export class AxPayloadTooLargeError extends Error {
  override name = "AxPayloadTooLargeError";
  constructor(
    readonly bytes: number,
    readonly limit: number,
    /** Which payload: `payload`, or `payload 3` of a batch. */
    what = "payload",
  ) {
    super(
      `${what} is ${bytes} bytes, over the ${limit}-byte limit. Store the data elsewhere (a table, an object store) and pass its key in the payload.`,
    );
  }
}

/** The run was cancelled while this attempt ran: the abort reason its task's `signal` carries. */
export class AxCancelledError extends Error {
  override name = "AxCancelledError";
  constructor(
    readonly runId: string,
    /** Why, when ax cancelled it itself (a concurrency key's strategy). */
    reason?: string,
  ) {
    // Recorded on every node the cancel closed, started or not: the message fits both.
    super(
      `run ${runId} was cancelled${reason ? ` (${reason})` : ""}: nodes not yet started will not run, and a running attempt is stopped with its result, if any, discarded`,
    );
  }
}

/** A Client method got an argument it cannot use (a `listRuns` status, a negative `limit`); nothing was read or written. */
export class AxArgumentError extends Error {
  override name = "AxArgumentError";
}

/** A trigger option (`delay`, `runAt`, `priority`) is invalid; nothing was written. */
export class AxTriggerOptionError extends Error {
  override name = "AxTriggerOptionError";
  readonly statusCode = 400;
}

/** A flow's own key function threw on a payload it was given over HTTP. */
export class AxKeyFunctionError extends Error {
  override name = "AxKeyFunctionError";
  readonly statusCode = 400;
  constructor(flow: string, which: string, cause: unknown, remedy = `send the payload it expects, or pass "${which}" in the body`) {
    super(
      `flow "${flow}"'s ${which} function failed on this payload (${cause instanceof Error ? cause.message : String(cause)}); ${remedy}`,
      { cause },
    );
  }
}

/** `tx` is something ax cannot write through atomically with the caller's own writes. */
export class AxTransactionHandleError extends Error {
  override name = "AxTransactionHandleError";
  constructor(what: string) {
    super(
      `triggerFlow({ tx }) got ${what}: pass the pg client you called BEGIN on (pool.connect() gives one), or the drizzle transaction of db.transaction(async (tx) => …)`,
    );
  }
}

/** The caller's connection is not inside a transaction, so the run could not join it. */
export class AxNotInTransactionError extends Error {
  override name = "AxNotInTransactionError";
  constructor(cause: unknown) {
    super(
      "triggerFlow({ tx }) needs a connection inside a transaction: call BEGIN on the pg client (or use db.transaction(async (tx) => …) with drizzle) before triggering, and COMMIT after your own writes",
      { cause },
    );
  }
}

/** A run list's `cursor` is not one a previous page returned. */
export class AxBadCursorError extends Error {
  override name = "AxBadCursorError";
  constructor(readonly cursor: string) {
    super(`cursor "${cursor}" is not a page cursor; pass the nextCursor of the previous page unchanged, or omit it for the first page`);
  }
}
