/** Errors of stored configuration versions (`ax config`). */

/** No stored config version has this number. */
export class AxConfigVersionNotFoundError extends Error {
  override name = "AxConfigVersionNotFoundError";
  constructor(
    readonly version: number,
    latest: number,
  ) {
    super(
      latest === 0
        ? `config version ${version} does not exist: no version is stored yet; store one with \`ax config apply <file>\``
        : `config version ${version} does not exist (versions 1-${latest}); list them with \`ax config history\``,
    );
  }
}

/** A config command needs something this process lacks (the server without a config service). */
export class AxConfigUnavailableError extends Error {
  override name = "AxConfigUnavailableError";
}
