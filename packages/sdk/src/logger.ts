import pino, { type DestinationStream, type Logger } from "pino";
import { DEFAULT_REDACT_PATHS, envLogLevel, REDACTED } from "@ax/common";

/**
 * The logger a Runtime makes when given none: pino with the secret paths (DEFAULT_REDACT_PATHS
 * plus `redact`) censored, so a header or a `password` field logged by accident prints `[redacted]`.
 * An error's cause is logged as `err.cause`, not appended to `err.message`: ax's messages end with
 * what to do next, and already quote the driver's reason.
 */
export function axLogger(
  options: { level?: string | undefined; redact?: string[] | undefined } = {},
  destination?: DestinationStream,
): Logger {
  const settings = {
    level: options.level ?? envLogLevel("info"),
    redact: { paths: [...DEFAULT_REDACT_PATHS, ...(options.redact ?? [])], censor: REDACTED },
    serializers: { err: pino.stdSerializers.errWithCause },
  };
  return destination ? pino(settings, destination) : pino(settings);
}
