import { AxClosedError, envLogLevel } from "@ax/common";
import { connectRedis, DEFAULT_REDIS_URL, QueueRegistry, RunWriter, closeRedis, redisConnectionOptions } from "@ax/coordinator";
import { openStore, type Store } from "@ax/store";
import type { Redis } from "ioredis";
import pino, { type Logger } from "pino";

export interface ConnectionOptions {
  /** `postgres://…` (optionally `?schema=name`); unset: embedded PGlite in `dataDir`. */
  storage?: string | undefined;
  /** Embedded PGlite directory when `storage` is unset. @defaultValue "./.ax/data" */
  dataDir?: string | undefined;
  /**
   * `redis://…`, `rediss://…`, or a master behind Sentinel:
   * `redis+sentinel://[user:password@]host:26379[,host:26379…]/<master name>[/<db>]`.
   * @defaultValue "redis://127.0.0.1:6379"
   */
  redis?: string | undefined;
  /**
   * Redis key prefix of every queue: separate prefixes are separate clusters. A hash tag (`"{ax}"`)
   * keeps every key in one Redis Cluster slot. @defaultValue "ax"
   */
  prefix?: string | undefined;
}

/** The store and the hot queue, opened together and closed together. */
export interface Connections {
  store: Store;
  redis: Redis;
  queues: QueueRegistry;
  /** Group-commits the runs that triggers through these connections write. */
  writer: RunWriter;
  redisUrl: string;
  /**
   * Closes everything, waiting at most `timeoutMs` for each side (Redis, PostgreSQL) to answer:
   * an unreachable server is dropped, not waited for. @defaultValue 5000
   */
  close(timeoutMs?: number): Promise<void>;
}

/**
 * Where connection errors go when the caller gives no logger: stderr, warnings only, so a command
 * printing results on stdout stays readable.
 */
function defaultLogger(): Logger {
  return pino({ level: envLogLevel("warn") }, pino.destination(2));
}

export function openConnections(
  options: ConnectionOptions,
  log: Logger = defaultLogger(),
  { lazyRedis = false }: { lazyRedis?: boolean } = {},
): Connections {
  const redisUrl = options.redis ?? DEFAULT_REDIS_URL;
  // A malformed Sentinel URL is refused up front, before anything is opened, though Redis is reached later.
  redisConnectionOptions(redisUrl);
  const store = openStore({ url: options.storage, dataDir: options.dataDir });
  // The Redis side is built at its first use: a Client that only reads history never loads
  // ioredis and BullMQ, nor opens a socket.
  let hot: { redis: Redis; queues: QueueRegistry; writer: RunWriter } | undefined;
  let closed = false;
  const open = () => {
    if (!hot) {
      // Opened after close, nothing would ever close it and the process would not exit.
      if (closed) throw new AxClosedError();
      const redis = connectRedis(redisUrl, log, { lazy: lazyRedis });
      const queues = new QueueRegistry(redis, options.prefix ?? "ax", log);
      hot = { redis, queues, writer: new RunWriter(store.db, queues, log) };
    }
    return hot;
  };
  return {
    store,
    get redis() {
      return open().redis;
    },
    get queues() {
      return open().queues;
    },
    get writer() {
      return open().writer;
    },
    redisUrl,
    async close(timeoutMs = 5000) {
      closed = true;
      const opened = hot;
      await Promise.all([opened?.queues.close(timeoutMs).then(() => closeRedis(opened.redis)), store.close(timeoutMs)]);
    },
  };
}
