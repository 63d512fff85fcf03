import { isSecretKey, REDACTED } from "@ax/common";

/**
 * Stored config versions as the API shows them: a webhook sink's inline `secret` and its `headers`
 * are written into the version (YAML, parsed form and diff) and would reach every `read` token and
 * the console. Their values are masked here; `secret_env` names a variable, not a secret, and stays.
 * PostgreSQL keeps the version as written, so a rollback restores the real values.
 */
export function redactConfigVersion<T extends object>(version: T): T {
  const v = version as Record<string, unknown>;
  return {
    ...version,
    ...(typeof v.yaml === "string" ? { yaml: redactConfigText(v.yaml) } : {}),
    ...(typeof v.diff === "string" ? { diff: redactConfigText(v.diff) } : {}),
    ...("parsed" in v ? { parsed: redactParsed(v.parsed) } : {}),
  };
}

const isEnvName = (key: string) => /(_env|Env)$/.test(key);

function redactParsed(value: unknown, inHeaders = false): unknown {
  if (Array.isArray(value)) return value.map((item) => redactParsed(item));
  if (value === null || typeof value !== "object") return inHeaders ? REDACTED : value;
  return Object.fromEntries(
    Object.entries(value).map(([key, field]) => {
      if (inHeaders || (isSecretKey(key) && !isEnvName(key) && typeof field !== "object")) return [key, REDACTED];
      return [key, redactParsed(field, key === "headers")];
    }),
  );
}

/** `key: value` in block or flow style, the value quoted or bare (not a nested `{…}`/`[…]`), up to a comma, brace, comment or line end. */
const PAIR = /([A-Za-z0-9_-]+)([ \t]*:[ \t]*)(?![ \t{[])("(?:[^"\\\n]|\\.)*"|'[^'\n]*'|[^,}\n#]*[^,}\n#\s])/g;

/** YAML text (or a unified diff of it) with the values of secret-looking keys and of every header masked. */
export function redactConfigText(text: string): string {
  let headersIndent: number | undefined;
  return text
    .split("\n")
    .map((line) => {
      const body = line.replace(/^[+\- ]/, (m) => (line.startsWith("---") || line.startsWith("+++") ? m : " "));
      const indent = body.search(/\S/);
      // A block-style `headers:` mapping: every pair indented below it is a header.
      if (headersIndent !== undefined && indent >= 0 && indent <= headersIndent) headersIndent = undefined;
      const inHeaders = headersIndent !== undefined;
      if (/^\s*-?\s*headers[ \t]*:[ \t]*(#.*)?$/.test(body)) headersIndent = indent;
      return line.replace(PAIR, (pair, key: string, colon: string, _value: string, offset: number) => {
        const inFlowHeaders = /headers[ \t]*:[ \t]*\{[^}]*$/.test(line.slice(0, offset));
        const masked = inHeaders || inFlowHeaders || (isSecretKey(key) && !isEnvName(key));
        return masked && key !== "headers" ? `${key}${colon}"${REDACTED}"` : pair;
      });
    })
    .join("\n");
}
