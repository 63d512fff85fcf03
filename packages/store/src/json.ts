import { AxNotJsonError } from "@ax/common";
import type { Json } from "./types.js";

/**
 * What PostgreSQL cannot hold in text or jsonb although JavaScript strings can: NUL, and a UTF-16
 * surrogate without its pair (not a Unicode character at all; a string cut in the middle of an emoji).
 */
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** `text` with every character PostgreSQL cannot store replaced by U+FFFD, for text we must keep (error messages). */
export function toStorableText(text: string): string {
  return text.replace(UNSTORABLE, "\uFFFD");
}

/** Why PostgreSQL would refuse `text`, or undefined when it can store it. */
function unstorable(text: string): string | undefined {
  UNSTORABLE.lastIndex = 0;
  const found = UNSTORABLE.exec(text);
  if (!found) return undefined;
  const unit = found[0].charCodeAt(0);
  return unit === 0
    ? `contains a NUL character (\\u0000) at index ${found.index}`
    : `contains a lone UTF-16 surrogate (\\u${unit.toString(16)}) at index ${found.index}, half of a character (a string cut inside an emoji?)`;
}

const UNSTORABLE_VERDICT = "cannot be stored in PostgreSQL";
const STORABLE_ADVICE =
  "Remove the character, cut strings at code-point boundaries (Array.from(text).slice(...)), or encode binary data (e.g. base64).";

/**
 * Checks that `value` is plain JSON (no functions, BigInt, cycles, class instances …) that
 * PostgreSQL can store (no NUL or lone surrogate in any string or key).
 */
export function assertJson(value: unknown, what: string): asserts value is Json {
  visit(value, "$", new Set(), what);
}

function visit(value: unknown, path: string, ancestors: Set<object>, what: string): void {
  switch (typeof value) {
    case "string": {
      const problem = unstorable(value);
      if (problem) throw new AxNotJsonError(what, path, problem, STORABLE_ADVICE, UNSTORABLE_VERDICT);
      return;
    }
    case "boolean":
      return;
    case "number":
      if (!Number.isFinite(value)) throw new AxNotJsonError(what, path, `is ${value}`);
      return;
    case "undefined":
      throw new AxNotJsonError(what, path, "is undefined");
    case "bigint":
      throw new AxNotJsonError(what, path, "is a BigInt (convert it to a string)");
    case "function":
      throw new AxNotJsonError(what, path, "is a function");
    case "symbol":
      throw new AxNotJsonError(what, path, "is a symbol");
  }
  if (value === null) return;
  const object = value as object;
  if (ancestors.has(object)) throw new AxNotJsonError(what, path, "refers back to itself (circular)");
  ancestors.add(object);
  if (Array.isArray(object)) {
    object.forEach((item, i) => {
      visit(item, `${path}[${i}]`, ancestors, what);
    });
  } else {
    const proto = Object.getPrototypeOf(object);
    if (proto !== Object.prototype && proto !== null) {
      throw new AxNotJsonError(what, path, `is a ${object.constructor?.name ?? "class instance"} (convert it to plain data)`);
    }
    for (const [key, item] of Object.entries(object)) {
      const itemPath = `${path}${member(key)}`;
      const problem = unstorable(key);
      if (problem) throw new AxNotJsonError(what, itemPath, `is a key that ${problem}`, STORABLE_ADVICE, UNSTORABLE_VERDICT);
      visit(item, itemPath, ancestors, what);
    }
  }
  ancestors.delete(object);
}

/** `.key`, or `["key"]` escaped as JSON when the key is not a plain name (so a path never holds raw NULs or halves of characters). */
function member(key: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}

/** Size in bytes of the value's JSON text, as stored. */
export function jsonBytes(value: Json): number {
  return Buffer.byteLength(JSON.stringify(value), "utf8");
}
