import pino, { type DestinationStream, type Logger } from "pino";
import { DEFAULT_REDACT_PATHS, envLogLevel, REDACTED } from "@ax/common";

/**
 * The logger a Runtime makes when given none: pino with the secret paths (DEFAULT_REDACT_PATHS
 * plus `redact`) censored, so a header or a `password` field logged by accident prints `[redacted]`.
 */
export function axLogger(
  options: { level?: string | undefined; redact?: string[] | undefined } = {},
  destination?: DestinationStream,
): Logger {
  const settings = {
    level: options.level ?? envLogLevel("info"),
    redact: { paths: [...DEFAULT_REDACT_PATHS, ...(options.redact ?? [])], censor: REDACTED },
  };
  return destination ? pino(settings, destination) : pino(settings);
}
