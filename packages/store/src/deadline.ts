import { setTimeout as sleep } from "node:timers/promises";

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
  const timer = new AbortController();
  const late = sleep(Math.max(0, ms), { done: false } as const, { signal: timer.signal }).catch(() => ({ done: false }) as const);
  try {
    return await Promise.race([
      work.then(
        (value) => ({ done: true, value }) as const,
        (error: unknown) => ({ done: false, error }) as const,
      ),
      late,
    ]);
  } finally {
    timer.abort();
  }
}

/** Milliseconds left until `deadline` (a `Date.now()` value), never negative. */
export function msUntil(deadline: number): number {
  return Math.max(0, deadline - Date.now());
}
