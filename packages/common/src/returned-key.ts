import { MAX_KEY_LENGTH } from "./limits.js";

/** A key function's value as a key, or why it cannot be one (to finish "the function …"). */
export type ReturnedKey = { key: string | undefined; refused?: undefined } | { key?: undefined; refused: string };

/**
 * The one rule for a flow's `idempotencyKey` / `businessKey` functions, for the Client and the
 * HTTP API alike: a string as it is, a number as its text (an order id kept as a number), null or
 * undefined for no key. Anything else is refused: an object would be stored as some text of it,
 * and two events would share a key by accident.
 */
export function returnedKey(returned: unknown): ReturnedKey {
  if (returned === undefined || returned === null) return { key: undefined };
  const key = typeof returned === "number" && Number.isFinite(returned) ? String(returned) : returned;
  if (typeof key !== "string") {
    const got = Array.isArray(key) ? "an array" : typeof key === "object" ? "an object" : `${typeof key} ${String(key)}`;
    return { refused: `returned ${got}: return a string (or undefined for no key)` };
  }
  if (key.length === 0) return { refused: "returned an empty string: return a non-empty key, or undefined for none" };
  if (key.length > MAX_KEY_LENGTH) {
    return {
      refused: `returned ${key.length} characters: keys are at most ${MAX_KEY_LENGTH}, so derive a shorter one (a hash of the long one)`,
    };
  }
  return { key };
}
