import redactor from "@pinojs/redact";
import { DEFAULT_REDACT_PATHS, maskSecrets, REDACTED } from "@ax/common";
import type { Json } from "@ax/store";

/**
 * What a task log line's fields become before PostgreSQL stores them: what stdout prints (pino's
 * paths, the defaults plus the Runtime's `redact`), and, as in attempt summaries, every
 * secret-looking key at any depth. The stored copy is read with a `read` token, where stdout is
 * read by whoever runs the process.
 */
export function storedFieldsCensor(extraPaths: readonly string[] = []): (fields: Json) => Json {
  const redact = redactor({ paths: [...DEFAULT_REDACT_PATHS, ...extraPaths], censor: REDACTED, serialize: JSON.stringify, strict: false });
  return (fields) => maskSecrets(JSON.parse(redact(fields) as string)) as Json;
}
