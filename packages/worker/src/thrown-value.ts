// What a thrown value that may not be an Error says: shared by the worker and its thread/process children.
import { maskSecrets } from "@ax/common";

/**
 * A thrown value that is not an Error: an error-like object (`{ name, message }`, as some
 * libraries throw) keeps its name and message; anything else is NonErrorThrown with the value as text.
 */
export function nonErrorThrown(value: unknown): { name: string; message: string } {
  try {
    const { name, message } = (typeof value === "object" && value !== null ? value : {}) as { name?: unknown; message?: unknown };
    if (typeof name === "string" && name !== "" && typeof message === "string") return { name, message };
  } catch {
    // A getter that throws: the value is described as text below.
  }
  return { name: "NonErrorThrown", message: textOf(value) };
}

/**
 * Anything a task threw, as text: a plain object or array as its JSON (`{"code":42}`, not
 * `[object Object]`), with the values of secret-looking keys masked as in a result's summary,
 * since the text is logged, published in events and sent to alert sinks; a value whose own
 * conversion throws (a hostile toString) still gets one.
 */
export function textOf(value: unknown): string {
  if (typeof value === "string") return value;
  try {
    if (typeof value === "object" && value !== null && (Array.isArray(value) || Object.getPrototypeOf(value) === Object.prototype)) {
      return JSON.stringify(maskSecrets(value)) ?? String(value);
    }
    return String(value);
  } catch {
    return `[unprintable ${typeof value}]`;
  }
}
