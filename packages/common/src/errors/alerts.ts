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

/**
 * A webhook sink signs with `secret_env`, and this process's environment does not set that
 * variable: the alert is not sent unsigned, since a receiver that checks signatures would drop it
 * (or one that does not would take anyone's).
 */
export class AxAlertSecretUnsetError extends Error {
  override name = "AxAlertSecretUnsetError";
  constructor(
    readonly url: string,
    readonly variable: string,
  ) {
    super(
      `secret_env ${variable} is not set in this process's environment, so alert webhook ${url} would go unsigned; nothing was sent: set ${variable} where coordinators run (and where \`ax alerts test\` runs), then restart them`,
    );
  }
}

/** `ax alerts test <group>` or `ax alerts mute <group>` named a group the configuration does not define. */
export class AxAlertGroupNotFoundError extends Error {
  override name = "AxAlertGroupNotFoundError";
  readonly statusCode = 404;
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

/** `ax alerts unmute <id>` named a mute that does not exist or has already ended. */
export class AxAlertMuteNotFoundError extends Error {
  override name = "AxAlertMuteNotFoundError";
  readonly statusCode = 404;
  constructor(readonly id: number) {
    super(`no alert mute ${id} is in force (it ended, or never existed); \`ax alerts mutes\` lists those in force`);
  }
}

/** A mute narrowed to a flow or task the cluster has never registered: it would mute nothing. */
export class AxAlertMuteTargetError extends Error {
  override name = "AxAlertMuteTargetError";
  readonly statusCode = 404;
  constructor(kind: "flow" | "task", name: string, known: string[]) {
    const sorted = [...known].sort();
    const some = sorted.slice(0, 20).join(", ") + (sorted.length > 20 ? ", …" : "");
    super(
      `no ${kind} named "${name}" is registered, so a mute of its alerts would mute nothing` +
        (known.length > 0 ? ` (known: ${some})` : "") +
        `; check the name (\`ax config show\` lists flows and tasks)`,
    );
  }
}
