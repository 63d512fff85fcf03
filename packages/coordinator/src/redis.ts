import { Redis } from "ioredis";

export const DEFAULT_REDIS_URL = "redis://127.0.0.1:6379";

/** BullMQ needs `maxRetriesPerRequest: null` so blocking commands survive reconnects. */
export function connectRedis(url: string = DEFAULT_REDIS_URL): Redis {
  return new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: true });
}
