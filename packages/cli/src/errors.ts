/** The HTTP API of the `ax dev` that holds the data directory refused a request. */
export class AxApiError extends Error {
  override name = "AxApiError";
  constructor(
    readonly api: string,
    readonly status: number,
    readonly remoteName: string,
    remoteMessage: string,
  ) {
    super(`${remoteName}: ${remoteMessage} (answered by ${api}, HTTP ${status})`);
  }
}

/**
 * An ax error the HTTP API of `ax dev` answered (`AxRunNotFoundError`, `AxNodeNotFoundError`, …),
 * with the API's name and message unchanged: a command prints what it prints on the direct path.
 */
export class AxApiAnsweredError extends Error {
  constructor(
    readonly api: string,
    readonly status: number,
    remoteName: string,
    remoteMessage: string,
  ) {
    super(remoteMessage);
    this.name = remoteName;
  }
}

/** The process holding the embedded data directory advertises an API that does not answer. */
export class AxApiUnreachableError extends Error {
  override name = "AxApiUnreachableError";
  constructor(
    readonly api: string,
    readonly pid: number,
    reason: string,
  ) {
    super(
      `process ${pid} holds the embedded data directory and serves it at ${api}, but that API does not answer (${reason}). ` +
        "Wait until `ax dev` has started, or stop it to use the directory directly.",
    );
  }
}

/** A flag or argument of an `ax` command is missing or wrong; nothing was done. */
export class AxUsageError extends Error {
  override name = "AxUsageError";
}

/** The entry module given to a command could not be found, or exports no flow. */
export class AxEntryError extends Error {
  override name = "AxEntryError";
}

/** `ax config edit` stored nothing: no version to start from, or the editor failed. */
export class AxConfigEditError extends Error {
  override name = "AxConfigEditError";
}
