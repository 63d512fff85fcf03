/** Errors in what users wrote: flow and task definitions, runtime configuration. */

/** A flow or task definition is wrong; the message says which and how to fix it. */
export class AxDefinitionError extends Error {
  override name = "AxDefinitionError";
}

/** Runtime configuration (YAML or constructor options) is invalid; names file, line, column and key when it can. */
export class AxConfigError extends Error {
  override name = "AxConfigError";
  constructor(
    message: string,
    readonly file?: string,
    readonly line?: number,
    readonly key?: string,
    readonly column?: number,
  ) {
    super(message);
  }
}
