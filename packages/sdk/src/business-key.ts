import type { KeyedLimit } from "@ax/worker";

/** How a keyed limit names its key: a dotted path into the task's first argument, or a function of its arguments. */
export type KeyOption = string | ((...args: any[]) => unknown);

/**
 * PostgreSQL's text for a JSON number (`numeric`): JavaScript writes 1e21 and 1e-7 with an
 * exponent, PostgreSQL writes every digit.
 */
function numericText(n: number): string {
  const text = JSON.stringify(n);
  const exponent = /^(-?)(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(text);
  if (!exponent) return text;
  const [, sign, first, rest = "", power] = exponent;
  const digits = first! + rest;
  const point = 1 + Number(power);
  if (point <= 0) return `${sign}0.${"0".repeat(-point)}${digits}`;
  if (point >= digits.length) return `${sign}${digits}${"0".repeat(point - digits.length)}`;
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}

/** PostgreSQL's text for a jsonb value: ", " and ": " between items, object keys shortest first, then by their bytes. */
function jsonbText(value: unknown): string {
  if (typeof value === "number") return numericText(value);
  if (Array.isArray(value)) return `[${value.map(jsonbText).join(", ")}]`;
  if (value !== null && typeof value === "object") {
    const keys = Object.keys(value).map((key) => [key, Buffer.from(key)] as const);
    keys.sort(([, a], [, b]) => a.length - b.length || Buffer.compare(a, b));
    return `{${keys.map(([key]) => `${JSON.stringify(key)}: ${jsonbText((value as Record<string, unknown>)[key])}`).join(", ")}}`;
  }
  return JSON.stringify(value);
}

/**
 * A business key value as text, exactly as a flow's key reads it in SQL (`payload #>> path`,
 * "null" when missing), so one order gives one key at both levels: a string as it is; a
 * number, boolean, object or array as its jsonb text; no value (undefined, or nothing JSON can
 * hold) as "null". The value is taken as JSON would store it (a Date as its ISO string).
 */
function keyText(value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value === "bigint") return value.toString();
  const json = JSON.stringify(value);
  if (json === undefined) return "null";
  const stored: unknown = JSON.parse(json);
  return typeof stored === "string" ? stored : jsonbText(stored);
}

/** One step of a dotted path, as `#>>` takes it: own keys only, an array by its index (negative: from the end). */
function step(value: unknown, part: string): unknown {
  if (Array.isArray(value)) {
    if (!/^-?\d+$/.test(part)) return undefined;
    const index = Number(part);
    return value[index < 0 ? value.length + index : index];
  }
  return value !== null && typeof value === "object" && Object.hasOwn(value, part) ? (value as Record<string, unknown>)[part] : undefined;
}

/** Reads the business key off a node's arguments. */
export function compileKey(key: KeyOption): KeyedLimit {
  if (typeof key === "function") return { key: (args) => keyText(key(...args)), keySource: "function" };
  const path = key.split(".");
  return {
    key: (args) => keyText(path.reduce<unknown>(step, args[0])),
    keySource: key,
  };
}
