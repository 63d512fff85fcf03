/**
 * What `within` saw: the work's value; or that it failed (`error`) or the time ran out first
 * (no `error`; the work is left running).
 */
export type Within<T> = { done: true; value: T } | { done: false; error?: unknown };

/**
 * Waits for `work` at most `ms` milliseconds, never throwing. Shutdown paths use it so a
 * connection that never answers (a pool waiting for a checked-out client, Redis reconnecting)
 * cannot hold them forever, and one that fails does not stop the rest from closing.
 */
export async function within<T>(work: Promise<T>, ms: number): Promise<Within<T>> {
  // A plain timer: aborting a signal builds a DOMException, and the hot path's write deadlines use this too.
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<Within<T>>((resolve) => {
    timer = setTimeout(() => resolve({ done: false }), Math.max(0, ms));
  });
  try {
    return await Promise.race([
      work.then(
        (value): Within<T> => ({ done: true, value }),
        (error: unknown): Within<T> => ({ done: false, error }),
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Milliseconds left until `deadline` (a `Date.now()` value), never negative. */
export function msUntil(deadline: number): number {
  return Math.max(0, deadline - Date.now());
}
