import { AxConfigError } from "./errors/definition.js";

/** pino's levels, as `logLevel` and `AX_LOG_LEVEL` take them. */
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
const LEVELS: readonly string[] = LOG_LEVELS;

/**
 * The log level `AX_LOG_LEVEL` asks for, else `fallback`. Empty is unset (`AX_LOG_LEVEL=` in an
 * env file); a word pino does not know is refused here, naming the variable, rather than by pino
 * as "default level: must be included in custom levels".
 */
export function envLogLevel(fallback: string): string {
  const level = process.env.AX_LOG_LEVEL?.trim();
  if (!level) return fallback;
  if (!LEVELS.includes(level)) throw new AxConfigError(`AX_LOG_LEVEL=${level} is not a log level: use one of ${LEVELS.join(", ")}`);
  return level;
}
