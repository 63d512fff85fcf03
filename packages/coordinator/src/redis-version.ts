import { AxRedisVersionError } from "@ax/common";
import { explainRedisRefusal } from "./redis.js";
import type { Redis } from "ioredis";
import type { Logger } from "pino";

/** While a start waits for Redis, a line this often. */
const WAITING_LOG_MS = 10_000;

/** BullMQ's own floor: its scripts use commands older servers lack. */
const MINIMUM = "5.0.0";
/** Below this BullMQ's blocking waits and some of its scripts fall back to slower forms. */
const RECOMMENDED = "6.2.0";

const parts = (version: string) => version.split(".").map((part) => Number.parseInt(part, 10) || 0);

function below(version: string, floor: string): boolean {
  const [a, b] = [parts(version), parts(floor)];
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const [x, y] = [a[i] ?? 0, b[i] ?? 0];
    if (x !== y) return x < y;
  }
  return false;
}

/**
 * Checks the server's version once per process, in place of BullMQ's check on every queue it
 * opens: ax opens its queues with `skipVersionCheck`, because BullMQ reports what it finds with
 * `console.warn` in plain text, once per queue, into logs that are JSON. A server that does not
 * say its version (a proxy) is let through.
 */
export async function checkRedisVersion(redis: Redis, log: Logger, waitingLogMs = WAITING_LOG_MS): Promise<string | null> {
  // A start waits for Redis (a pod may start before it); said every so often, so that a wrong
  // address does not look like a hung process.
  const began = Date.now();
  const waiting = setInterval(() => {
    const { host, port } = redis.options;
    log.warn(
      { redis: host ? `${host}:${port}` : undefined, waitedS: Math.round((Date.now() - began) / 1000) },
      "still waiting for Redis to answer before starting: check that it is running and that --redis / REDIS_URL (the redis option) points at it",
    );
  }, waitingLogMs);
  waiting.unref();
  // The first command a starting process sends (a Runtime, `ax server`): a refused password fails the start here.
  const info = await redis
    .info("server")
    .catch((error: unknown) => {
      throw explainRedisRefusal(error, "starting this process");
    })
    .finally(() => clearInterval(waiting));
  const version = /^redis_version:(\S+)/m.exec(info)?.[1] ?? null;
  if (version === null) return null;
  if (below(version, MINIMUM)) throw new AxRedisVersionError(version, MINIMUM);
  if (below(version, RECOMMENDED)) {
    log.warn({ redisVersion: version }, `Redis ${version} is older than ${RECOMMENDED}; it works, but upgrade when you can`);
  }
  return version;
}
