import type { Json } from "./types.js";

/** Why a value cannot travel as JSON: names the path of the first bad part. */
export class AxNotJsonError extends Error {
  override name = "AxNotJsonError";
  constructor(
    readonly what: string,
    readonly path: string,
    readonly problem: string,
  ) {
    super(`${what} is not plain JSON: ${path} ${problem}. Pass only objects, arrays, strings, finite numbers, booleans and null.`);
  }
}

/** Checks that `value` is plain JSON (no functions, BigInt, cycles, class instances …). */
export function assertJson(value: unknown, what: string): asserts value is Json {
  visit(value, "$", new Set(), what);
}

function visit(value: unknown, path: string, ancestors: Set<object>, what: string): void {
  switch (typeof value) {
    case "string":
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
    object.forEach((item, i) => visit(item, `${path}[${i}]`, ancestors, what));
  } else {
    const proto = Object.getPrototypeOf(object);
    if (proto !== Object.prototype && proto !== null) {
      throw new AxNotJsonError(what, path, `is a ${object.constructor?.name ?? "class instance"} (convert it to plain data)`);
    }
    for (const [key, item] of Object.entries(object)) visit(item, `${path}.${key}`, ancestors, what);
  }
  ancestors.delete(object);
}

/** Size in bytes of the value's JSON text, as stored. */
export function jsonBytes(value: Json): number {
  return Buffer.byteLength(JSON.stringify(value), "utf8");
}
