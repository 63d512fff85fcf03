import { Redis } from "ioredis";
import type { Logger } from "pino";

export const DEFAULT_REDIS_URL = "redis://127.0.0.1:6379";

/** Reconnects back off to this, so a long outage costs one attempt every 2 s. */
const MAX_RECONNECT_DELAY_MS = 2000;

/**
 * Sends a connection's errors to the log instead of ioredis's "Unhandled error event" on stderr.
 * While Redis is unreachable every reconnect fails the same way: one warning per outage, not one
 * per attempt, and a line when it is back.
 */
export function reportRedisErrors(redis: Redis, log: Logger, connection: string): void {
  let failing = false;
  redis.on("error", (err: Error) => {
    if (failing) return;
    failing = true;
    log.warn({ err, connection }, "Redis connection failed; reconnecting");
  });
  redis.on("ready", () => {
    if (!failing) return;
    failing = false;
    log.info({ connection }, "Redis connection is back");
  });
}

/**
 * BullMQ needs `maxRetriesPerRequest: null` so blocking commands survive reconnects. Errors go to
 * `log`; closing never waits on a server that is gone (see `closeRedis`).
 */
export function connectRedis(url: string, log: Logger): Redis {
  const redis = new Redis(url, {
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    connectTimeout: 5000,
    retryStrategy: (times) => Math.min(times * 100, MAX_RECONNECT_DELAY_MS),
  });
  reportRedisErrors(redis, log, "main");
  return redis;
}

/** A second connection on the same server and options (subscriber, blocking reads), reporting to `log`. */
export function duplicateRedis(redis: Redis, log: Logger, connection: string): Redis {
  const copy = redis.duplicate();
  reportRedisErrors(copy, log, connection);
  return copy;
}

/**
 * Closes a connection without waiting on the server: `quit()` queues behind a reconnect that may
 * never succeed, `disconnect()` drops the socket and any pending reconnect at once.
 */
export function closeRedis(redis: Redis): void {
  redis.disconnect();
}
