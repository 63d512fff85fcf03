import type { Redis, RedisOptions } from "ioredis";
import type { Logger } from "pino";
import { AxConfigError, AxRedisUnreachableError, isRedisAuthRefusal, lazyRequire } from "@ax/common";
import { within } from "@ax/store";

const ioredis = lazyRequire<typeof import("ioredis")>(import.meta.url, "ioredis");

export const DEFAULT_REDIS_URL = "redis://127.0.0.1:6379";

/** Reconnects back off to this, so a long outage costs one attempt every 2 s. */
const MAX_RECONNECT_DELAY_MS = 2000;
/** How long a closed connection waits for the server to close its side before dropping the socket. */
const DISCONNECT_TIMEOUT_MS = 50;

/**
 * Sends a connection's errors to the log instead of ioredis's "Unhandled error event" on stderr.
 * While Redis is unreachable every reconnect fails the same way: one warning per outage, not one
 * per attempt, and a line when it is back.
 */
export function reportRedisErrors(redis: Redis, log: Logger, connection: string): void {
  let failing = false;
  redis.on("error", (err: Error) => {
    lastFailure.set(redis, err.message);
    if (failing) return;
    failing = true;
    log.warn({ err: withoutCommandArguments(err), connection }, "Redis connection failed; reconnecting");
  });
  redis.on("ready", () => {
    lastFailure.delete(redis);
    if (!failing) return;
    failing = false;
    log.info({ connection }, "Redis connection is back");
  });
}

/** Why each reported connection is failing (the message of its last error), until it is ready again. */
const lastFailure = new WeakMap<Redis, string>();

/**
 * `err` without the arguments of the command that failed: ioredis attaches the command to its
 * errors, and a refused `AUTH` carries the user and password (a rotated or mistyped password would
 * print it in every process's log). The command's name stays.
 */
export function withoutCommandArguments(err: Error): Error {
  const command = (err as { command?: { name?: unknown } }).command;
  if (!command) return err;
  return Object.assign(Object.create(Object.getPrototypeOf(err) as object) as Error, err, {
    message: err.message,
    stack: err.stack,
    command: { name: command.name },
  });
}

/**
 * A dedicated connection subscribed to `channel`. ioredis re-subscribes by itself after a
 * reconnect, but leaves that command's promise unhandled: a connection lost again at that moment
 * rejects it with nobody listening, and an unhandled rejection ends a Node process. So this
 * connection re-subscribes on each `ready` itself, logging a failure (the next reconnect tries
 * again).
 */
export async function subscribeTo(
  base: Redis,
  log: Logger,
  connection: string,
  channel: string,
  onMessage: (message: string) => void,
): Promise<Redis> {
  const subscriber = base.duplicate({ autoResubscribe: false });
  reportRedisErrors(subscriber, log, connection);
  subscriber.on("message", (from: string, message: string) => {
    if (from === channel) onMessage(message);
  });
  subscriber.on("ready", () => {
    subscriber
      .subscribe(channel)
      .catch((err: unknown) => log.debug({ err, connection }, "could not subscribe again; retrying on the next reconnect"));
  });
  await subscriber.subscribe(channel);
  return subscriber;
}

const SENTINEL_URL = /^redis(s)?\+sentinel:\/\/(?:([^:@/]*)(?::([^@/]*))?@)?([^/?#]+)\/([^/?#]+)(?:\/(\d+))?$/;

/**
 * Where a Redis URL leads: `redis://` and `rediss://` as ioredis reads them, or a master behind
 * Sentinel as `redis+sentinel://[user:password@]host:port[,host:port…]/<master name>[/<db>]`
 * (`rediss+sentinel://` for TLS). The password is the master's; ioredis asks the Sentinels where it is
 * and follows failovers.
 */
export function redisConnectionOptions(url: string): RedisOptions | string {
  if (!/^rediss?\+sentinel:/.test(url)) return url;
  const match = SENTINEL_URL.exec(url);
  if (!match) {
    throw new AxConfigError(
      `Redis URL "${url.replace(/\/\/[^@/]*@/, "//***@")}" is not a Sentinel URL: write redis+sentinel://[user:password@]host:26379[,host:26379…]/<master name>[/<db>]`,
    );
  }
  const [, tls, username, password, hosts, name, db] = match;
  const sentinels = (hosts as string).split(",").map((hostPort) => {
    const at = hostPort.lastIndexOf(":");
    const port = at === -1 ? 26379 : Number(hostPort.slice(at + 1));
    if (!Number.isInteger(port) || port <= 0 || port > 65535) {
      throw new AxConfigError(`Redis Sentinel address "${hostPort}" has no valid port: write host:26379`);
    }
    return { host: at === -1 ? hostPort : hostPort.slice(0, at), port };
  });
  return {
    sentinels,
    name: decodeURIComponent(name as string),
    ...(username ? { username: decodeURIComponent(username) } : {}),
    ...(password ? { password: decodeURIComponent(password) } : {}),
    ...(db ? { db: Number(db) } : {}),
    ...(tls ? { tls: {}, sentinelTLS: {}, enableTLSForSentinelMode: true } : {}),
  };
}

/**
 * BullMQ needs `maxRetriesPerRequest: null` so blocking commands survive reconnects. Errors go to
 * `log`; closing never waits on a server that is gone (see `closeRedis`). `url` may name a
 * Sentinel-managed master (see `redisConnectionOptions`). `lazy`: connect at the first command,
 * for a client whose calls may need PostgreSQL only.
 */
export function connectRedis(url: string, log: Logger, { lazy = false }: { lazy?: boolean } = {}): Redis {
  const options: RedisOptions = {
    lazyConnect: lazy,
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    connectTimeout: 5000,
    retryStrategy: (times) => Math.min(times * 100, MAX_RECONNECT_DELAY_MS),
    // Closing while the connection's ready check is in flight (a short CLI command that never
    // needed Redis) fails that check, and ioredis then disconnects the closed socket again behind a
    // timer of this length that nothing clears: at its default of 2 s every such command lingered
    // 2 s after its answer. Our closes drop the socket anyway (`closeRedis`), so waiting long for
    // the server's side of the close buys nothing.
    disconnectTimeout: DISCONNECT_TIMEOUT_MS,
  };
  const target = redisConnectionOptions(url);
  const { Redis } = ioredis();
  const redis = typeof target === "string" ? new Redis(target, options) : new Redis({ ...target, ...options });
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
 * never succeed, `disconnect()` drops the socket and any pending reconnect at once. A connection
 * already closed is left alone: ioredis would arm a 2 s timer for a socket close that already
 * happened, and keep the process alive that long after a stop.
 */
export function closeRedis(redis: Redis): void {
  if (redis.status === "end") return;
  redis.disconnect();
}

/** How long a call that needs Redis waits for it before saying it is unreachable. */
export const REDIS_ANSWER_MS = 5000;

/**
 * `work`'s answer, or AxRedisUnreachableError once `ms` have passed (ioredis queues commands
 * behind a reconnect that may never succeed) or as soon as Redis refuses `redis`'s password; the
 * error names the connection's last failure. `what` names the call ("listing the queues").
 */
export async function answeredByRedis<T>(
  redis: Redis,
  work: Promise<T>,
  what: string,
  consequence?: string,
  ms = REDIS_ANSWER_MS,
): Promise<T> {
  const answer = await within(work, ms);
  if (answer.done) return answer.value;
  if ("error" in answer) throw explainRedisRefusal(answer.error, what, consequence);
  throw new AxRedisUnreachableError(what, ms, consequence, lastFailure.get(redis));
}

/**
 * `error` as AxRedisUnreachableError when it is Redis refusing the connection's user or password,
 * else `error` itself: a refused password fails commands at once, with Redis's terse reply
 * (`WRONGPASS …`) and no next step.
 */
export function explainRedisRefusal(error: unknown, what: string, consequence?: string): unknown {
  const message = error instanceof Error ? error.message : undefined;
  return message !== undefined && isRedisAuthRefusal(message) ? new AxRedisUnreachableError(what, 0, consequence, message) : error;
}
