import { processWide } from "@ax/common";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import type { AxEvent } from "./event.js";
import { EventStreamReader } from "./reader.js";

type Listener = (event: AxEvent) => void | Promise<void>;

interface Source {
  redis: Redis;
  prefix: string;
  log: Logger;
  refs: number;
  reader: EventStreamReader | undefined;
}

const listeners = processWide("events.listeners", () => new Set<Listener>());
/** One reader per cluster this process is part of, however many Runtimes share it: a listener sees each event once. */
const sources = processWide("events.sources", () => new Map<string, Source>());

function sourceKey(redis: Redis, prefix: string): string {
  const o = redis.options;
  // Behind Sentinel host and port are ioredis's defaults: the master's name tells clusters apart.
  return `${o.name ?? ""}@${o.host ?? ""}:${o.port ?? ""}/${o.db ?? 0}|${prefix}`;
}

function deliver(events: AxEvent[]): void {
  for (const event of events) {
    for (const listener of listeners) {
      // A listener's failure must never stop the others or the reader.
      Promise.resolve()
        .then(() => listener(event))
        .catch(() => {});
    }
  }
}

function startReader(source: Source): void {
  if (source.reader || listeners.size === 0) return;
  const reader = new EventStreamReader(source.redis, source.prefix, source.log, deliver);
  source.reader = reader;
  reader.start();
}

/**
 * Subscribes to the lifecycle events of the whole cluster (every process on the same Redis and
 * prefix) that a started Runtime of this process belongs to; returns the unsubscribe function.
 * Delivery is at least once: de-duplicate on `event.id`.
 */
export function onEvent(listener: Listener): () => void {
  listeners.add(listener);
  for (const source of sources.values()) startReader(source);
  return () => {
    listeners.delete(listener);
  };
}

/** A Runtime joins its cluster's events to `onEvent`; the returned function leaves again. */
export function attachEventSource(redis: Redis, prefix: string, log: Logger): () => Promise<void> {
  const key = sourceKey(redis, prefix);
  let source = sources.get(key);
  if (!source) {
    source = { redis, prefix, log, refs: 0, reader: undefined };
    sources.set(key, source);
  }
  source.refs++;
  startReader(source);
  let detached = false;
  return async () => {
    if (detached) return;
    detached = true;
    source.refs--;
    if (source.refs > 0) return;
    sources.delete(key);
    await source.reader?.stop();
  };
}
