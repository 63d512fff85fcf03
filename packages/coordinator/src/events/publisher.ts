import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { EVENT_FIELD, eventStreamKey, type NewAxEvent } from "./event.js";

/** Entries the stream keeps, roughly (XADD MAXLEN ~ trims whole radix-tree nodes, so cheaply). */
export const EVENT_STREAM_MAX_LEN = 100_000;
/** Events waiting for Redis; beyond this (Redis down for long) new events are dropped and counted. */
const MAX_BUFFERED = 10_000;

/**
 * Puts events on the cluster's stream without ever holding up or failing the code that raised
 * them: `publish` only buffers, and everything buffered during one turn of the event loop goes
 * to Redis as one pipeline of XADDs. An event Redis refuses is logged and dropped.
 */
export class EventPublisher {
  private buffer: string[] = [];
  private scheduled = false;
  private flushing: Promise<void> = Promise.resolve();
  private dropped = 0;
  private lastWarnAt = 0;
  private readonly key: string;

  constructor(
    private readonly redis: Redis,
    prefix: string,
    private readonly log: Logger,
    private readonly maxLen = EVENT_STREAM_MAX_LEN,
  ) {
    this.key = eventStreamKey(prefix);
  }

  publish(event: NewAxEvent): void {
    if (this.buffer.length >= MAX_BUFFERED) {
      this.dropped++;
      this.warn("event buffer full (Redis is not taking events); dropping events");
      return;
    }
    this.buffer.push(JSON.stringify({ ...event, at: new Date().toISOString() }));
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flushing = this.flushing.then(() => this.send());
    });
  }

  /** Sends what is buffered now; resolves once Redis answered (or refused). */
  async flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.send());
    await this.flushing;
  }

  /** Events dropped so far because Redis refused them or the buffer was full. */
  get droppedEvents(): number {
    return this.dropped;
  }

  private async send(): Promise<void> {
    if (this.buffer.length === 0) return;
    const batch = this.buffer;
    this.buffer = [];
    const pipeline = this.redis.pipeline();
    for (const json of batch) pipeline.xadd(this.key, "MAXLEN", "~", this.maxLen, "*", EVENT_FIELD, json);
    try {
      const results = (await pipeline.exec()) ?? [];
      const failed = results.filter(([error]) => error).length;
      if (failed > 0) {
        this.dropped += failed;
        this.warn(`Redis refused ${failed} event(s); they are dropped`, results.find(([e]) => e)?.[0]);
      }
    } catch (error) {
      this.dropped += batch.length;
      this.warn(`could not publish ${batch.length} event(s); they are dropped`, error);
    }
  }

  /** One line per 10 s at most: a Redis outage must not flood the log. */
  private warn(message: string, err?: unknown): void {
    const now = Date.now();
    if (now - this.lastWarnAt < 10_000) return;
    this.lastWarnAt = now;
    this.log.warn({ err, dropped: this.dropped }, message);
  }
}
