/** A flow or task definition is wrong; the message says which and how to fix it. */
export class AxDefinitionError extends Error {
  override name = "AxDefinitionError";
}

/** Runtime configuration (YAML or constructor options) is invalid; names file, line and key when it can. */
export class AxConfigError extends Error {
  override name = "AxConfigError";
  constructor(
    message: string,
    readonly file?: string,
    readonly line?: number,
    readonly key?: string,
  ) {
    super(message);
  }
}

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

/** A trigger option (`delay`, `runAt`, `priority`) is invalid; nothing was written. */
export class AxTriggerOptionError extends Error {
  override name = "AxTriggerOptionError";
}
