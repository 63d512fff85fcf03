/** Errors of alert delivery (`alerts:` in runtime.yaml, `ax alerts test`). */

/** A webhook sink did not take an alert after all its retries. */
export class AxAlertDeliveryError extends Error {
  override name = "AxAlertDeliveryError";
  constructor(
    /** The webhook URL as `redactUrl` shows it: scheme and host, its path and credentials masked. */
    readonly url: string,
    readonly attempts: number,
    reason: string,
  ) {
    super(
      // The reason first: the console's alerts page shows one line of this, and the URL is on its pill.
      `${reason}: alert webhook ${url} failed ${attempts} time(s); check that the URL is reachable and answers 2xx, or raise the sink's timeout/retries`,
    );
  }
}

/** `ax alerts test <group>` named a group the configuration does not define. */
export class AxAlertGroupNotFoundError extends Error {
  override name = "AxAlertGroupNotFoundError";
  constructor(
    readonly group: string,
    defined: string[],
  ) {
    super(
      defined.length === 0
        ? `alert group "${group}" is not defined: the configuration has no alerts: section; add one (see docs/events-and-alerts.md) and \`ax config apply\` it`
        : `alert group "${group}" is not defined (defined: ${defined.join(", ")}); add it under alerts: and \`ax config apply\` it`,
    );
  }
}
