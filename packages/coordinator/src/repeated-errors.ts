import type { Logger } from "pino";
import { withoutCommandArguments } from "./redis.js";

/** Within this window, an error already logged is counted, not logged again. */
const WINDOW_MS = 60_000;

/**
 * Logs each distinct error once a minute at most, with how many like it were held back since.
 * During a Redis outage every BullMQ worker of a process (one per task queue) reports each failed
 * reconnect: about ten identical lines a second for seven queues, which bury the one line that
 * says what happened. During a PostgreSQL outage every periodic pass (admission every 250 ms,
 * heartbeats, the reconciler, schedules) fails alike, and logged one by one, a coordinator wrote
 * six lines a second.
 */
export class RepeatedErrors {
  private readonly logged = new Map<string, { at: number; held: number }>();

  constructor(
    private readonly log: Logger,
    private readonly windowMs = WINDOW_MS,
  ) {}

  warn(err: unknown, fields: Record<string, unknown>, msg: string, now = Date.now()): void {
    const key = `${msg}|${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`;
    const seen = this.logged.get(key);
    if (seen && now - seen.at < this.windowMs) {
      seen.held++;
      return;
    }
    this.logged.set(key, { at: now, held: 0 });
    // A warning without an error (`err` undefined) is throttled the same way, by its message.
    const shown = err === undefined ? {} : { err: err instanceof Error ? withoutCommandArguments(err) : err };
    this.log.warn({ ...shown, ...fields, ...(seen?.held ? { heldBack: seen.held } : {}) }, msg);
  }

  /**
   * The work went through: after errors, `msg` is logged once at info, so an outage's end is seen
   * as well as its start, and the next error is logged at once.
   */
  recovered(msg: string): void {
    if (this.logged.size === 0) return;
    const heldBack = [...this.logged.values()].reduce((sum, e) => sum + e.held, 0);
    this.logged.clear();
    this.log.info(heldBack > 0 ? { heldBack } : {}, msg);
  }
}
