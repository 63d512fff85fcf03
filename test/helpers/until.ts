import { setTimeout as sleep } from "node:timers/promises";

export interface PollOptions {
  /** Give up after this long; default 15 s. */
  timeoutMs?: number;
  /** Pause between reads; default 100 ms. */
  everyMs?: number;
}

/** Polls `check` until it answers something truthy, and answers that; fails after `timeoutMs` naming `what`. */
export async function until<T>(
  what: string,
  check: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  options: PollOptions = {},
): Promise<T> {
  return (await untilMatches(what, check, Boolean, options)) as T;
}

/** Polls `read` until `done` holds for its answer, and answers that; the failure after `timeoutMs` shows the last answer. */
export async function untilMatches<T>(
  what: string,
  read: () => Promise<T> | T,
  done: (value: T) => boolean,
  { timeoutMs = 15_000, everyMs = 100 }: PollOptions = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`still waiting for ${what} after ${timeoutMs} ms; last read: ${JSON.stringify(value)}`);
    await sleep(everyMs);
  }
}
