import { AxNotJsonError, MAX_JSON_DEPTH } from "@ax/common";
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
 * Checks that `value` is JSON as JSON.stringify writes it and PostgreSQL can store it: no
 * functions, BigInt, cycles or class instances without a `toJSON` (a valid Date is fine: it is
 * stored as its ISO string; an `undefined` property is left out, an `undefined` array item is
 * null), no NUL or lone surrogate in any string or key, and at most MAX_JSON_DEPTH levels of
 * nesting. The check itself recurses at most that deep, so no value can overflow the stack here.
 * `exact: true` refuses what JSON.stringify would change (a Date, a `toJSON`, an `undefined` property),
 * where the stored value would not be what the caller wrote (a flow's constants).
 */
export function assertJson(value: unknown, what: string, options: { exact?: boolean } = {}): asserts value is Json {
  visit(value, "$", 0, new Set(), { what, exact: options.exact ?? false });
}

function visit(value: unknown, path: string, depth: number, ancestors: Set<object>, check: { what: string; exact: boolean }): void {
  const { what } = check;
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
  if (value instanceof Date && !check.exact) {
    // JSON.stringify writes a valid Date as its ISO string, and that is what is stored; an invalid one it writes as null.
    if (Number.isNaN(value.getTime())) throw new AxNotJsonError(what, path, "is an invalid Date");
    return;
  }
  const object = value as object;
  if (ancestors.has(object)) throw new AxNotJsonError(what, path, "refers back to itself (circular)");
  if (depth === MAX_JSON_DEPTH) {
    throw new AxNotJsonError(
      what,
      path,
      `is nested ${depth + 1} levels deep`,
      "Flatten the data, or store it elsewhere and pass its key.",
      `is nested deeper than the limit of ${MAX_JSON_DEPTH} levels`,
    );
  }
  ancestors.add(object);
  if (Array.isArray(object)) {
    object.forEach((item, i) => {
      // JSON.stringify writes an undefined item as null.
      if (item !== undefined || check.exact) visit(item, `${path}[${i}]`, depth + 1, ancestors, check);
    });
  } else {
    const proto = Object.getPrototypeOf(object);
    const toJSON = (object as { toJSON?: unknown }).toJSON;
    if (proto !== Object.prototype && proto !== null && typeof toJSON === "function" && !check.exact) {
      // A class that says how it is written (a decimal, a date library's type): what JSON.stringify stores.
      let written: unknown;
      try {
        written = toJSON.call(object, "");
      } catch (error) {
        throw new AxNotJsonError(what, path, `has a toJSON that threw (${(error as Error)?.message ?? String(error)})`);
      }
      visit(written, path, depth + 1, ancestors, check);
    } else if (proto !== Object.prototype && proto !== null) {
      throw new AxNotJsonError(what, path, `is a ${object.constructor?.name ?? "class instance"} (convert it to plain data)`);
    } else {
      for (const [key, item] of Object.entries(object)) {
        // JSON.stringify leaves an undefined property out, as an optional field left unset means.
        if (item === undefined && !check.exact) continue;
        const itemPath = `${path}${member(key)}`;
        const problem = unstorable(key);
        if (problem) throw new AxNotJsonError(what, itemPath, `is a key that ${problem}`, STORABLE_ADVICE, UNSTORABLE_VERDICT);
        visit(item, itemPath, depth + 1, ancestors, check);
      }
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
