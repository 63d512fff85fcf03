/**
 * What "a secret" looks like to ax: the log paths pino censors and the object keys summaries mask.
 * Kept here because the SDK's logger, the CLI's logger and the worker's summaries must agree.
 */

/** pino `redact` paths every ax logger censors; Runtime's `redact` option adds to them. */
export const DEFAULT_REDACT_PATHS: readonly string[] = [
  "req.headers.authorization",
  "req.headers.cookie",
  "headers.authorization",
  "authorization",
  "password",
  "token",
  "secret",
  "apiKey",
  "api_key",
  "*.password",
  "*.token",
  "*.secret",
  "*.authorization",
  "*.apiKey",
  "*.api_key",
  // ioredis errors carry the failed command, and a refused AUTH's arguments are the password.
  "err.command.args",
];

export const REDACTED = "[redacted]";

/** Key names whose values a summary masks: any key containing one of these words, in any case or separator style. */
const SECRET_KEY = /password|passwd|passphrase|token|secret|authori[sz]ation|api[-_]?key|credential|private[-_]?key/i;

export function isSecretKey(key: string): boolean {
  return SECRET_KEY.test(key);
}

/**
 * A copy of a value with the value of every secret-looking key replaced, at any depth. Errors and
 * values that serialise themselves (a Date, a Buffer: `toJSON`) are kept as they are, for the
 * serializer that prints them.
 */
export function maskSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(maskSecrets);
  if (value === null || typeof value !== "object" || value instanceof Error) return value;
  if (typeof (value as { toJSON?: unknown }).toJSON === "function") return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, isSecretKey(k) ? REDACTED : maskSecrets(v)]));
}

/**
 * Scheme and host only: credentials, path and query of a webhook URL are often the secret (a Slack
 * hook's path), so config read back, alert history and logs show the URL this way.
 */
export function redactUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return REDACTED;
  }
  const credentials = url.username || url.password ? `${REDACTED}@` : "";
  const rest = url.pathname !== "/" || url.search || url.hash ? `/${REDACTED}` : "";
  return `${url.protocol}//${credentials}${url.host}${rest}`;
}
