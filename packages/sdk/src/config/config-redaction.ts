import { isSecretKey, REDACTED, redactUrl } from "@ax/common";
import type { Document, Node } from "yaml";
import { yaml } from "./yaml-lazy.js";

/**
 * Stored config versions as the API shows them: a webhook sink's inline `secret`, its `headers` and
 * its `url` (a webhook URL is often a credential itself) are written into the version and would
 * reach every `read` token and the console. Their values are masked on the parsed YAML document,
 * whatever its style (block or flow, quoted keys, block scalars, anchors, tags), and comments are
 * dropped (an old secret may sit in one). `secret_env` names a variable, not a secret, and stays.
 * PostgreSQL keeps the version as written: a rollback restores the real values.
 */
export function redactConfigYaml(text: string): string {
  const { isAlias, isMap, isPair, isScalar, parseDocument, Scalar, visit } = yaml();
  const doc = parseDocument(text);
  // Stored versions parsed when they were applied; one that no longer does is shown as nothing.
  if (doc.errors.length > 0) return `# ${REDACTED}\n`;
  doc.commentBefore = null;
  doc.comment = null;
  visit(doc, {
    Node(_, node) {
      (node as { commentBefore?: string | null; comment?: string | null }).commentBefore = null;
      (node as { comment?: string | null }).comment = null;
    },
    Pair(_, pair, path) {
      const key = isScalar(pair.key) ? String(pair.key.value) : undefined;
      if (key === undefined) return;
      if (key === "headers") {
        maskValues(pair.value as Node | null, doc);
        if (!isMap(pair.value) && !isAlias(pair.value)) pair.value = new Scalar(REDACTED);
        return visit.SKIP;
      }
      if (key === "url" && isScalar(pair.value) && typeof pair.value.value === "string") {
        pair.value = new Scalar(redactUrl(pair.value.value));
        return visit.SKIP;
      }
      // Only alert sinks hold secrets; elsewhere a key is a task, flow or pool name (`send_password_reset`).
      const top = path[2];
      const inAlerts = isPair(top) && isScalar(top.key) && top.key.value === "alerts";
      if (inAlerts && isSecretKey(key) && !isEnvName(key)) {
        pair.value = new Scalar(REDACTED);
        return visit.SKIP;
      }
      return undefined;
    },
  });
  return doc.toString();
}

/** Every value of a mapping (an anchored one through its alias), whatever its keys: header names are the sender's to choose. */
function maskValues(node: Node | null, doc: Document): void {
  const { isAlias, isMap, Scalar } = yaml();
  const target = isAlias(node) ? node.resolve(doc) : node;
  if (!isMap(target)) return;
  for (const item of target.items) item.value = new Scalar(REDACTED);
}

const isEnvName = (key: string) => /(_env|Env)$/.test(key);

/** The parsed form of a version, masked as its text is. */
export function redactConfigParsed(value: unknown): unknown {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return redactParsed(value, false, false);
  return Object.fromEntries(Object.entries(value).map(([key, field]) => [key, redactParsed(field, false, key === "alerts")]));
}

/** `secrets`: under `alerts`, where secret-looking keys are masked. */
function redactParsed(value: unknown, inHeaders: boolean, secrets: boolean): unknown {
  if (Array.isArray(value)) return value.map((item) => redactParsed(item, false, secrets));
  if (value === null || typeof value !== "object") return inHeaders ? REDACTED : value;
  return Object.fromEntries(
    Object.entries(value).map(([key, field]) => {
      if (inHeaders) return [key, REDACTED];
      if (key === "url" && typeof field === "string") return [key, redactUrl(field)];
      if (secrets && isSecretKey(key) && !isEnvName(key) && typeof field !== "object") return [key, REDACTED];
      return [key, redactParsed(field, key === "headers", secrets)];
    }),
  );
}
