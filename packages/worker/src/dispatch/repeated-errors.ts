import type { Logger } from "pino";
import { withoutCommandArguments } from "@ax/coordinator";

/** Within this window, an error already logged is counted, not logged again. */
const WINDOW_MS = 60_000;

/**
 * Logs each distinct error once a minute at most, with how many like it were held back since.
 * During a Redis outage every BullMQ worker of a process (one per task queue) reports each failed
 * reconnect: about ten identical lines a second for seven queues, which bury the one line that
 * says what happened.
 */
export class RepeatedErrors {
  private readonly logged = new Map<string, { at: number; held: number }>();

  constructor(
    private readonly log: Logger,
    private readonly windowMs = WINDOW_MS,
  ) {}

  warn(err: Error, fields: Record<string, unknown>, msg: string, now = Date.now()): void {
    const key = `${err.name}: ${err.message}`;
    const seen = this.logged.get(key);
    if (seen && now - seen.at < this.windowMs) {
      seen.held++;
      return;
    }
    this.logged.set(key, { at: now, held: 0 });
    this.log.warn({ err: withoutCommandArguments(err), ...fields, ...(seen?.held ? { heldBack: seen.held } : {}) }, msg);
  }
}
