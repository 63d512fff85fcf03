import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { setWaitingReason } from "@ax/coordinator";

/** A published waiting reason is refreshed this often while it holds, so readers can tell it from a stale one. */
const REASON_REFRESH_MS = 2000;

/**
 * Publishes why a queue waits, for `waitingReasons` to read. A reason that still holds is written
 * again only to refresh it, not at every refused fetch.
 */
export class ReasonPublisher {
  /** The waiting reason this process last published for the queue. */
  private reason: string | null = null;
  private reasonAt = 0;

  constructor(
    private readonly connection: Redis,
    private readonly prefix: string,
    private readonly queue: string,
    private readonly log: Logger,
  ) {}

  /** `until`: when the queue looks again; the reason holds at least that long without a refresh. */
  publish(reason: string, until = 0): void {
    const now = Date.now();
    if (reason === this.reason && now - this.reasonAt < REASON_REFRESH_MS) return;
    this.reason = reason;
    this.reasonAt = now;
    setWaitingReason(this.connection, this.prefix, this.queue, reason, until).catch((err) =>
      this.log.debug({ err }, "could not publish why a queue waits"),
    );
  }

  clear(): void {
    if (this.reason === null) return;
    this.reason = null;
    setWaitingReason(this.connection, this.prefix, this.queue, null).catch((err) =>
      this.log.debug({ err }, "could not clear why a queue waits"),
    );
  }
}
