import { connectRedis, DEFAULT_REDIS_URL, QueueRegistry, RunWriter } from "@ax/coordinator";
import { openStore, type Store } from "@ax/store";
import type { Redis } from "ioredis";

export interface ConnectionOptions {
  /** `postgres://…` (optionally `?schema=name`); unset: embedded PGlite in `dataDir`. */
  storage?: string | undefined;
  /** Embedded PGlite directory when `storage` is unset. @defaultValue "./.ax/data" */
  dataDir?: string | undefined;
  /** @defaultValue "redis://127.0.0.1:6379" */
  redis?: string | undefined;
  /** Redis key prefix of every queue: separate prefixes are separate clusters. @defaultValue "ax" */
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
  close(): Promise<void>;
}

export function openConnections(options: ConnectionOptions): Connections {
  const store = openStore({ url: options.storage, dataDir: options.dataDir });
  const redisUrl = options.redis ?? DEFAULT_REDIS_URL;
  const redis = connectRedis(redisUrl);
  const queues = new QueueRegistry(redis, options.prefix ?? "ax");
  return {
    store,
    redis,
    queues,
    writer: new RunWriter(store.db, queues),
    redisUrl,
    async close() {
      await queues.close();
      redis.disconnect();
      await store.close();
    },
  };
}
