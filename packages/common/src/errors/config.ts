import { AxStoreError } from "./data.js";
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

/**
 * An edit of config version `base` (the console's editor) arrived after another version was
 * stored: storing it would silently undo that one's changes.
 */
export class AxConfigConflictError extends Error {
  override name = "AxConfigConflictError";
  constructor(
    readonly base: number,
    readonly latest: number,
  ) {
    super(
      `this edit was made on config v${base}, but v${latest} has been stored since: nothing was stored. ` +
        `Open the version in force (v${latest}) again and make the change on it`,
    );
  }
}

/** A config command needs something this process lacks (the server without a config service). */
export class AxConfigUnavailableError extends Error {
  override name = "AxConfigUnavailableError";
}

/** The HTTP API's or metrics' port is taken: nothing of this process is left running. */
export class AxPortInUseError extends Error {
  override name = "AxPortInUseError";
  constructor(
    readonly port: number,
    readonly host: string,
    what: string,
    /** Where that port is chosen. */
    choice = "`--port`, `AX_PORT`, the Runtime's `port` option",
  ) {
    super(
      `${what} cannot listen on ${host}:${port}: another process uses that port (another \`ax dev\`, \`ax server\` or worker?). ` +
        `Stop it, or choose another port (${choice}); nothing was started.`,
    );
  }
}

/** How AxPortInUseError names each listener of a process, and where its port is chosen. */
export const API_LISTENER = { what: "the HTTP API" } as const;
export const METRICS_LISTENER = { what: "the metrics endpoint", choice: "`--metrics-port`, the Runtime's `metricsPort` option" } as const;

/** `error` translated when it says the port is taken (EADDRINUSE); otherwise returned as is. */
export function portError(error: unknown, port: number, host: string, what: string, choice?: string): unknown {
  return (error as { code?: unknown } | null)?.code === "EADDRINUSE" ? new AxPortInUseError(port, host, what, choice) : error;
}

/** The Redis server is older than the BullMQ commands ax runs need. */
export class AxRedisVersionError extends Error {
  override name = "AxRedisVersionError";
  constructor(
    readonly version: string,
    readonly minimum: string,
  ) {
    super(
      `Redis ${version} is too old: ax needs Redis ${minimum} or newer (7 is what it is tested with). Upgrade the server; nothing was started.`,
    );
  }
}

/**
 * Redis did not answer, within the time allowed, a call that cannot finish without it (down,
 * unreachable, a wrong URL): commands wait for a reconnect, so without a deadline the call would
 * hang. `failure` is the connection's last error, when it has one; when it is Redis refusing the
 * user or password (`WRONGPASS`, `NOAUTH`), that is what the message says, however long it took.
 */
export class AxRedisUnreachableError extends Error {
  override name = "AxRedisUnreachableError";
  constructor(what: string, waitedMs: number, consequence?: string, failure?: string) {
    const then = `so ${what} could not finish${consequence ? `: ${consequence}` : ""}.`;
    const reason = failure?.replace(/\.$/, "");
    super(
      reason !== undefined && isRedisAuthRefusal(reason)
        ? `Redis refuses the user or password (${reason}), ${then} ` +
            "Check them in --redis / REDIS_URL (redis://user:password@host:6379; the Runtime's or Client's redis option)."
        : `Redis did not answer within ${waitedMs / 1000} s, ${then} ` +
            (reason ? `Its connection fails with: ${reason}. ` : "") +
            "Check that Redis is running and that --redis / REDIS_URL (the Runtime's or Client's redis option) points at it.",
    );
  }
}

/** Redis's answer to a connection whose user or password it does not accept. */
export function isRedisAuthRefusal(message: string): boolean {
  return /^(WRONGPASS|NOAUTH)\b/.test(message);
}

/**
 * PostgreSQL or Redis could not be reached (an outage, not a refusal): the HTTP API answers 503,
 * and the metrics read from that store are left out of a scrape rather than failing it.
 */
export function isStoreOutage(error: unknown): boolean {
  return error instanceof AxRedisUnreachableError || (error instanceof AxStoreError && error.unreachable);
}
