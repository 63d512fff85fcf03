import type { Redis } from "ioredis";
import type { Logger } from "pino";
import type { Gauge, Registry } from "prom-client";
import { promClient } from "./prom-client-lazy.js";

/** The only policy under which Redis never drops a key to make room: any other may delete queued jobs. */
const SAFE_POLICY = "noeviction";

export type EvictionPolicyCheck = { policy: string; ok: boolean } | { policy: null; ok: null; reason: string };

/**
 * Reads Redis's `maxmemory-policy` and says loudly when it is not `noeviction`: under memory
 * pressure an evicting Redis silently deletes jobs and the limit gate's semaphores (the reconciler
 * re-enqueues lost jobs, but only on its next pass, and a lost semaphore over-admits). Sets
 * `ax_redis_eviction_policy_ok` (1/0) in `registry`. Managed Redis services often refuse CONFIG:
 * that is logged and the gauge is left out, since nothing is known either way.
 */
export async function checkEvictionPolicy(redis: Redis, log: Logger, registry?: Registry): Promise<EvictionPolicyCheck> {
  let policy: string | undefined;
  try {
    const reply = (await redis.config("GET", "maxmemory-policy")) as string[];
    policy = reply[1];
  } catch (error) {
    const reason = (error as Error).message;
    log.warn(
      { err: error },
      `could not read Redis's maxmemory-policy (${reason}); make sure it is "noeviction" in your provider's settings, or jobs may be evicted under memory pressure`,
    );
    return { policy: null, ok: null, reason };
  }
  if (policy === undefined) {
    const reason = "CONFIG GET maxmemory-policy answered nothing";
    log.warn(`${reason}; make sure the Redis policy is "noeviction", or jobs may be evicted under memory pressure`);
    return { policy: null, ok: null, reason };
  }
  const ok = policy === SAFE_POLICY;
  if (registry) {
    const existing = registry.getSingleMetric("ax_redis_eviction_policy_ok");
    const gauge =
      (existing as Gauge | undefined) ??
      new (promClient().Gauge)({
        name: "ax_redis_eviction_policy_ok",
        help: 'Whether Redis\'s maxmemory-policy is "noeviction" (1) or may evict queued jobs (0); absent when Redis refuses CONFIG',
        registers: [registry],
      });
    gauge.set(ok ? 1 : 0);
  }
  if (!ok) {
    log.error(
      { policy },
      `Redis maxmemory-policy is "${policy}": under memory pressure Redis will silently delete queued jobs and limit semaphores. Set it to "noeviction" (redis-server --maxmemory-policy noeviction, or CONFIG SET maxmemory-policy noeviction)`,
    );
  }
  return { policy, ok };
}
