import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { closeRedis, duplicateRedis } from "../redis.js";
import { eventStreamKey, parseEntry, type AxEvent } from "./event.js";

const BLOCK_MS = 1000;
const BATCH = 500;

type StreamReply = [string, [string, string[]][]][] | null;

/** The id of the stream's newest entry, or "0-0" when it is empty or absent: reading after it gives only new events. */
export async function lastEventId(redis: Redis, prefix: string): Promise<string> {
  const newest = (await redis.xrevrange(eventStreamKey(prefix), "+", "-", "COUNT", 1)) as [string, string[]][];
  return newest[0]?.[0] ?? "0-0";
}

/** Events after `after` (exclusive), oldest first, at most `count`. */
export async function eventsAfter(redis: Redis, prefix: string, after: string, count = BATCH): Promise<AxEvent[]> {
  const entries = (await redis.xrange(eventStreamKey(prefix), `(${after}`, "+", "COUNT", count)) as [string, string[]][];
  return entries.map(parseEntry).filter((e): e is AxEvent => e !== undefined);
}

/**
 * Follows the cluster's event stream on a connection of its own (XREAD BLOCK holds it) and hands
 * every event to `deliver`, in stream order. It resumes after the last id it delivered when the
 * connection comes back, so an event is missed only if the stream trimmed it meanwhile.
 */
export class EventStreamReader {
  private redis: Redis | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private markPositioned!: () => void;
  /**
   * Resolves once the reader knows where it starts: a replay read after this leaves no gap
   * before the reader's first event.
   */
  readonly positioned = new Promise<void>((resolve) => (this.markPositioned = resolve));

  constructor(
    private readonly base: Redis,
    private readonly prefix: string,
    private readonly log: Logger,
    private readonly deliver: (events: AxEvent[]) => void,
  ) {}

  /** Starts after `after` (an event id), or after the newest event in the stream once Redis answers. */
  start(after?: string): void {
    this.redis = duplicateRedis(this.base, this.log, "events");
    this.running = this.loop(after);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.redis) closeRedis(this.redis);
    await this.running;
  }

  private async loop(from: string | undefined): Promise<void> {
    const key = eventStreamKey(this.prefix);
    let last = from;
    while (!this.stopped) {
      try {
        last ??= await lastEventId(this.redis!, this.prefix);
        this.markPositioned();
        const reply = (await this.redis!.xread("COUNT", BATCH, "BLOCK", BLOCK_MS, "STREAMS", key, last)) as StreamReply;
        const entries = reply?.[0]?.[1] ?? [];
        if (entries.length === 0) continue;
        last = entries[entries.length - 1]![0];
        this.deliver(entries.map(parseEntry).filter((e): e is AxEvent => e !== undefined));
      } catch (error) {
        if (this.stopped) return;
        this.log.debug({ err: error }, "event stream read failed; retrying");
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  }
}
