/**
 * What retryOn/noRetryOn and the failure record know of an error's class. Kept free of imports:
 * thread and process children load it, and an error thrown there reaches the worker as plain data
 * that has lost its class, so the child sends these and the revived error carries them.
 */

const CLASSES = Symbol("ax.errorClasses");

/** Constructor names from the error's own class up to `Error`, e.g. `["ConfigError", "AppError", "Error"]`. */
export function errorClasses(error: unknown): readonly string[] {
  if (!(error instanceof Error)) return [];
  const carried = (error as { [CLASSES]?: readonly string[] })[CLASSES];
  if (carried) return carried;
  const names: string[] = [];
  for (let proto: object | null = Object.getPrototypeOf(error); proto; proto = Object.getPrototypeOf(proto)) {
    const name: unknown = Object.hasOwn(proto, "constructor")
      ? (proto as { constructor?: { name?: unknown } }).constructor?.name
      : undefined;
    if (typeof name === "string" && name) names.push(name);
    if (proto === Error.prototype) break;
  }
  return names;
}

/** Whether `error` stands for one thrown in a thread or process child (a plain Error carrying its classes). */
export function isRevived(error: unknown): boolean {
  return error instanceof Error && (error as { [CLASSES]?: readonly string[] })[CLASSES] !== undefined;
}

/** A revived error answers `errorClasses` with the classes of the error it stands for. */
export function carryClasses(error: Error, classes: readonly string[]): void {
  Object.defineProperty(error, CLASSES, { value: classes });
}

/** ax's error classes that name themselves and that tasks extend to steer retries. */
const EXTENDED_BY_TASKS = new Set(["NonRetryableError", "RetryAfterError"]);

/**
 * The error's `name`, or its class name when it did not set a name of its own: a plain
 * `class ConfigError extends Error {}` is named "Error" by Error.prototype, and would be recorded
 * (and shown by `ax run`) as "Error: …".
 */
export function errorName(error: Error): string {
  let name: unknown;
  try {
    name = error.name;
    if (name === "Error" && nameHolder(error) === Error.prototype) return errorClasses(error)[0] ?? "Error";
    // A task's own class under one of the classes ax offers to extend (`class Declined extends
    // NonRetryableError {}`) inherits that name: shown by its own class name, as a plain subclass
    // of Error is. Names the task's code sets itself are kept.
    if (typeof name === "string" && EXTENDED_BY_TASKS.has(name)) return errorClasses(error)[0] ?? name;
    return String(name) || "Error";
  } catch {
    // A getter that throws, a name whose toString does: the task's error still gets recorded.
    return "Error";
  }
}

function nameHolder(error: Error): object | null {
  let holder: object | null = error;
  while (holder && !Object.hasOwn(holder, "name")) holder = Object.getPrototypeOf(holder);
  return holder;
}
