import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { closeRedis, duplicateRedis } from "@ax/coordinator";
import { within } from "@ax/store";
import { Wakeup } from "./wakeup.js";

/** How long one blocking call waits before it is sent again. */
const BLOCK_S = 5;
/** A blocking call unanswered this long after its own timeout is taken as lost with its connection. */
const WATCHDOG_MS = 2000;
/** After a failed call (Redis away), the next one waits this long. */
const RETRY_MS = 1000;

export interface MarkerWatchOptions<S> {
  connection: Redis;
  log: Logger;
  queues: readonly S[];
  /** Whether a job added to `queue` is news to this process: no fetch of it is finding jobs in a row. */
  waitsFor: (queue: S) => boolean;
  markerOf: (queue: S) => string;
  /** A key of this process alone: a member added to it ends the blocking call, so the next one waits on more queues. */
  pokeKey: string;
  /** `queue` got a job; `at` is when a delayed one falls due (ms since the epoch; 0: now). */
  onMarker: (queue: S, at: number) => void;
}

/**
 * Waits for jobs on BullMQ's own marker of each queue this process serves, all on one blocking
 * connection (`BZPOPMIN` over their keys). Adding a job sets its queue's marker and one waiting
 * client takes it, so a job added wakes one worker process rather than every process serving the
 * queue. BullMQ sets the marker again whenever a fetch finds a job, so a burst draws in more
 * fetches and more processes while jobs remain, and the last job of a burst costs one fetch that
 * finds nothing, as it does BullMQ's own workers.
 *
 * A queue whose fetches keep finding jobs is left out: they go on until one finds it empty, and
 * its markers would only wake this connection once per job. A process whose slots are all busy
 * still waits: a job in another of its queues must take the next free slot rather than the
 * backlog's next job (see `mayFetchNext`).
 */
export class MarkerWatch<S> {
  private client: Redis;
  private readonly local = new Wakeup();
  /** The queues of the blocking call in flight; undefined while none is. */
  private watching: Set<S> | undefined;
  private poked = false;
  private stopped = false;
  private loop: Promise<void> = Promise.resolve();

  constructor(private readonly o: MarkerWatchOptions<S>) {
    this.client = duplicateRedis(o.connection, o.log, "job markers");
  }

  start(): void {
    this.loop = this.run();
  }

  /** `queue` may have become worth waiting for: a blocking call that leaves it out is ended, and the next includes it. */
  changed(queue: S): void {
    if (this.stopped || !this.o.waitsFor(queue)) return;
    const watching = this.watching;
    if (!watching) {
      this.local.notify();
      return;
    }
    if (this.poked || watching.has(queue)) return;
    this.poked = true;
    this.o.connection.zadd(this.o.pokeKey, 0, "poke").catch((err) => this.o.log.debug({ err }, "could not end a wait for jobs early"));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.local.notify();
    closeRedis(this.client);
    await this.loop;
    // Not awaited: with Redis away the command would wait for a reconnect, and hold up the stop.
    this.o.connection.del(this.o.pokeKey).catch(() => undefined);
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const queues = this.o.queues.filter(this.o.waitsFor);
      if (queues.length === 0) {
        await this.local.wait(BLOCK_S * 1000);
        continue;
      }
      const byKey = new Map(queues.map((queue) => [this.o.markerOf(queue), queue]));
      let popped: [string, string, string] | null = null;
      this.watching = new Set(queues);
      try {
        popped = await this.pop([...byKey.keys(), this.o.pokeKey]);
      } catch (err) {
        if (this.stopped) break;
        this.o.log.debug({ err }, "waiting for jobs failed; trying again shortly");
        await this.local.wait(RETRY_MS);
      } finally {
        this.watching = undefined;
        this.poked = false;
      }
      if (!popped || this.stopped) continue;
      const queue = byKey.get(popped[0]);
      if (queue !== undefined) this.o.onMarker(queue, Number(popped[2]));
    }
  }

  /**
   * One blocking pop; a call the connection never answers is given up and the connection replaced.
   * While Redis is away the call waits for the reconnect (ioredis sends it again then), so it is
   * waited on for as long as the connection is down, and one watchdog period after: a new
   * connection would only fail the same way, and report the outage again each time.
   */
  private async pop(keys: string[]): Promise<[string, string, string] | null> {
    const client = this.client;
    const call = client.bzpopmin(keys, BLOCK_S);
    let wasDown = false;
    for (;;) {
      const answer = await within(call, BLOCK_S * 1000 + WATCHDOG_MS);
      if (answer.done) return answer.value;
      if ("error" in answer) throw answer.error;
      const down = client.status !== "ready";
      if (down || wasDown) {
        wasDown = down;
        continue;
      }
      this.o.log.warn("Redis did not answer a wait for jobs in time; replacing that connection");
      closeRedis(client);
      this.client = duplicateRedis(this.o.connection, this.o.log, "job markers");
      return null;
    }
  }
}
