import fc from "fast-check";

/** What PostgreSQL cannot keep in text or jsonb: NUL, and UTF-16 halves without their pair. */
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export function isStorable(text: string): boolean {
  return !UNSTORABLE.test(text);
}

/** Every string inside a JSON-like value, keys included. */
export function stringsIn(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.flatMap(stringsIn);
  if (value && typeof value === "object") return Object.entries(value).flatMap(([k, v]) => [k, ...stringsIn(v)]);
  return [];
}

/** One character a hostile but ordinary user might send: any code point, NUL, or half a surrogate pair. */
export const hostileUnit = fc.oneof(
  { arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 1 }), weight: 6 },
  { arbitrary: fc.string({ unit: "grapheme", minLength: 1, maxLength: 1 }), weight: 3 },
  { arbitrary: fc.constantFrom("\u0000", "\ud800", "\udbff", "\udc00", "\udfff", "😀".slice(0, 1)), weight: 1 },
);

export const hostileString = fc.string({ unit: hostileUnit, maxLength: 40 });

/** Unicode PostgreSQL stores as is: emoji, combining marks, every plane, but no NUL or lone surrogate. */
export const storableString = fc.string({ unit: "grapheme", maxLength: 40 }).filter(isStorable);

export const storableJson = fc.jsonValue({ stringUnit: "grapheme", maxDepth: 4 }).filter((v) => stringsIn(v).every(isStorable));

export const hostileJson = fc.jsonValue({ stringUnit: hostileUnit, maxDepth: 4 });
