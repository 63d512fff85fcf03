const MARK = Symbol.for("ax.executorChild");

/** Called once by isolated-entry.ts: this thread or process runs attempts for a parent worker. */
export function markExecutorChild(): void {
  (globalThis as Record<symbol, unknown>)[MARK] = true;
}

/**
 * Whether this thread or process is a thread/process executor's child. The child imports the
 * module that defined its task; that module must not start a Runtime there.
 */
export function insideExecutorChild(): boolean {
  return (globalThis as Record<symbol, unknown>)[MARK] === true;
}
