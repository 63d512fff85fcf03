/**
 * One value per process for `name`, however many copies of ax's modules the process loaded.
 * A service can hold two: its own CommonJS code compiled by tsx requires ax as a second copy next
 * to the one the `ax` command imported. Task definitions, `ax.context()`, `ax.once` and
 * `ax.onEvent` must be the same in both, or a task defined through one copy is run, and asks for
 * its context, through the other.
 */
export function processWide<T>(name: string, make: () => T): T {
  const key = Symbol.for(`ax-scheduler.${name}`);
  const holder = globalThis as unknown as Record<symbol, T | undefined>;
  holder[key] ??= make();
  return holder[key];
}
