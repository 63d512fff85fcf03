import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { RepeatedErrors } from "../repeated-errors.js";
import { EVENT_FIELD, eventStreamKey, type NewAxEvent } from "./event.js";

/** Entries the stream keeps, roughly (XADD MAXLEN ~ trims whole radix-tree nodes, so cheaply). */
export const EVENT_STREAM_MAX_LEN = 100_000;
/** Events waiting for Redis; beyond this (Redis down for long) new events are dropped and counted. */
const MAX_BUFFERED = 10_000;
/** Events per script call, so that one call never holds Redis for long. */
const PER_CALL = 500;

/**
 * XADDs each ARGV after the first (the stream's MAXLEN) as one entry. One call for a turn's
 * events costs the publishing process one command instead of one per event; the stream still
 * gets an entry, and an id, per event. Answers the number refused and the first refusal.
 */
const ADD_EVENTS = `
local failed, first = 0, false
for i = 2, #ARGV do
  local added = redis.pcall('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', '${EVENT_FIELD}', ARGV[i])
  if type(added) == 'table' and added.err then
    failed = failed + 1
    first = first or added.err
  end
end
return {failed, first or ''}
`;

type Stamped = NewAxEvent & { at?: string };

interface PublisherCommands {
  axEventsAdd(key: string, maxLen: number, ...events: string[]): Promise<[number, string]>;
}

/**
 * Puts events on the cluster's stream without ever holding up or failing the code that raised
 * them: `publish` only buffers, and everything buffered during one turn of the event loop goes
 * to Redis in one script call. An event Redis refuses is logged and dropped.
 */
export class EventPublisher {
  private buffer: string[] = [];
  private scheduled = false;
  private flushing: Promise<void> = Promise.resolve();
  private dropped = 0;
  private isoMs = -1;
  private iso = "";
  /** A Redis outage must not flood the log: each kind of loss is logged once a minute, with a count. */
  private readonly errors: RepeatedErrors;
  private readonly key: string;
  private readonly commands: PublisherCommands;

  constructor(
    redis: Redis,
    prefix: string,
    log: Logger,
    private readonly maxLen = EVENT_STREAM_MAX_LEN,
  ) {
    this.errors = new RepeatedErrors(log);
    this.key = eventStreamKey(prefix);
    redis.defineCommand("axEventsAdd", { lua: ADD_EVENTS, numberOfKeys: 1 });
    this.commands = redis as unknown as PublisherCommands;
  }

  /** Takes `event` over: it gains its `at`, so pass an object made for this call. */
  publish(event: NewAxEvent): void {
    if (this.buffer.length >= MAX_BUFFERED) {
      this.dropped++;
      this.errors.warn(undefined, { dropped: this.dropped }, "event buffer full (Redis is not taking events); dropping events");
      return;
    }
    // Every caller hands over a literal made for this call, so `at` joins it: a copy cost more than
    // the JSON, and text appended to the JSON is copied again when ioredis measures it.
    (event as Stamped).at = this.isoNow();
    this.buffer.push(JSON.stringify(event));
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flushing = this.flushing.then(() => this.send());
    });
  }

  /** The events of one millisecond share one text of it (about 1 µs an event saved; a turn raises dozens). */
  private isoNow(): string {
    const now = Date.now();
    if (now !== this.isoMs) {
      this.isoMs = now;
      this.iso = new Date(now).toISOString();
    }
    return this.iso;
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
    for (let from = 0; from < batch.length; from += PER_CALL) {
      const part = batch.slice(from, from + PER_CALL);
      try {
        const [failed, first] = await this.commands.axEventsAdd(this.key, this.maxLen, ...part);
        if (failed > 0) {
          this.dropped += failed;
          this.errors.warn(new Error(first), { events: failed, dropped: this.dropped }, "Redis refused events; they are dropped");
        } else {
          this.errors.recovered("Redis takes events again");
        }
      } catch (error) {
        // Unanswered (Redis gone mid-call) they may have been added; they count as dropped, the safe side for a warning.
        this.dropped += part.length;
        this.errors.warn(error, { events: part.length, dropped: this.dropped }, "could not publish events; they are dropped");
      }
    }
  }
}
