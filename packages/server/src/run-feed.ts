import type { ServerResponse } from "node:http";
import { AxRunNotFoundError } from "@ax/common";
import { TERMINAL_RUN_STATUSES, type RunInfo } from "@ax/store";

/** How the feed reads a run: `GET /api/runs/:id`'s answer, or undefined for an unknown id. */
export type ReadRun = (id: string) => Promise<RunInfo | undefined>;

interface Watch {
  clients: Set<ServerResponse>;
  /** The last RunInfo sent, as its JSON: a poll that reads the same text sends nothing. */
  last: string | undefined;
  timer: NodeJS.Timeout | undefined;
}

/** A comment line every so often keeps proxies from closing a stream on a run that does not change. */
const KEEPALIVE_MS = 15_000;

/**
 * Live runs for `GET /api/runs/:id/stream`: one PostgreSQL poll per watched run, whatever the
 * number of clients watching it, and an SSE `data:` line to each of them when the run changed.
 * A finished run is sent once more, then `event: end` closes its streams.
 */
export class RunFeed {
  private readonly watches = new Map<string, Watch>();
  private readonly keepalive: NodeJS.Timeout;

  constructor(
    private readonly read: ReadRun,
    private readonly onError: (error: unknown, runId: string) => void,
    private readonly intervalMs = 300,
  ) {
    this.keepalive = setInterval(() => {
      for (const watch of this.watches.values()) for (const client of watch.clients) client.write(": keepalive\n\n");
    }, KEEPALIVE_MS);
    this.keepalive.unref();
  }

  /** Streams run `id` to `client` (an SSE response whose headers are sent) until it ends or the client leaves. */
  watch(id: string, client: ServerResponse): void {
    let watch = this.watches.get(id);
    if (!watch) {
      watch = { clients: new Set(), last: undefined, timer: undefined };
      this.watches.set(id, watch);
      this.schedule(id, watch, 0);
    } else if (watch.last !== undefined) {
      client.write(`data: ${watch.last}\n\n`);
    }
    watch.clients.add(client);
    client.on("close", () => {
      watch.clients.delete(client);
      if (watch.clients.size === 0) this.stop(id, watch);
    });
  }

  /** Watched runs now (each is one poll loop). */
  get watching(): number {
    return this.watches.size;
  }

  close(): void {
    clearInterval(this.keepalive);
    for (const [id, watch] of this.watches) {
      for (const client of watch.clients) client.end();
      this.stop(id, watch);
    }
  }

  private schedule(id: string, watch: Watch, delay: number): void {
    watch.timer = setTimeout(() => void this.poll(id, watch), delay);
  }

  private stop(id: string, watch: Watch): void {
    clearTimeout(watch.timer);
    if (this.watches.get(id) === watch) this.watches.delete(id);
  }

  private async poll(id: string, watch: Watch): Promise<void> {
    let run: RunInfo | undefined;
    try {
      run = await this.read(id);
    } catch (error) {
      // PostgreSQL restarting or a slow query: the clients keep their last state, the next poll tries again.
      this.onError(error, id);
      if (this.watches.get(id) === watch) this.schedule(id, watch, this.intervalMs * 10);
      return;
    }
    if (this.watches.get(id) !== watch) return;
    if (!run) {
      const error = new AxRunNotFoundError(id);
      this.finish(id, watch, `event: error\ndata: ${JSON.stringify({ error: error.name, message: error.message })}\n\n`);
      return;
    }
    const text = JSON.stringify(run);
    if (text !== watch.last) {
      watch.last = text;
      for (const client of watch.clients) client.write(`data: ${text}\n\n`);
    }
    if (TERMINAL_RUN_STATUSES.includes(run.status)) this.finish(id, watch, "event: end\ndata: {}\n\n");
    else this.schedule(id, watch, this.intervalMs);
  }

  private finish(id: string, watch: Watch, last: string): void {
    for (const client of watch.clients) client.end(last);
    this.stop(id, watch);
  }
}
