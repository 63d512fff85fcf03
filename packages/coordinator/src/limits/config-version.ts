import type { Redis } from "ioredis";

/**
 * The newest config version any process of the prefix applies (or is about to), so that the limit
 * gate can refuse to decide on a process's older limits: a live config reaches each process at its
 * own moment, and for that moment two processes would otherwise admit by two different limits.
 */
export const configVersionKey = (prefix: string) => `${prefix}:config:version`;

/**
 * Kept long enough to outlast any process's catch-up (its poll is seconds), and gone on its own so
 * that a history reset under the same prefix is not compared with an old mark for ever.
 */
export const CONFIG_VERSION_MARK_MS = 10 * 60_000;

/** Raises the mark to `version`; never lowers it. */
const MARK = `
local seen = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) > seen then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) end
`;

interface MarkCommands {
  axConfigVersionMark(key: string, version: number, ttlMs: number): Promise<unknown>;
}

/** Records that `version` is being applied, before any process acts on it. */
export async function markConfigVersion(redis: Redis, prefix: string, version: number): Promise<void> {
  if (!("axConfigVersionMark" in redis)) redis.defineCommand("axConfigVersionMark", { lua: MARK, numberOfKeys: 1 });
  await (redis as unknown as MarkCommands).axConfigVersionMark(configVersionKey(prefix), version, CONFIG_VERSION_MARK_MS);
}
