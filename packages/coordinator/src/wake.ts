import type { Redis } from "ioredis";

/**
 * Tells workers when delayed jobs (retries) of a task queue fall due, so that an idle worker
 * fetches then instead of on its next poll. Jobs due at once need no message: adding them sets
 * BullMQ's marker, which wakes one worker.
 */
export interface WakeMessage {
  queue: string;
  at?: number;
  /** How many jobs were added: a worker sends no more fetches than that (absent: as many as it likes). */
  jobs?: number;
}

export function wakeChannel(prefix: string): string {
  return `${prefix}:ax:wake`;
}

export async function publishWake(redis: Redis, prefix: string, messages: WakeMessage[]): Promise<void> {
  if (messages.length > 0) await redis.publish(wakeChannel(prefix), JSON.stringify(messages));
}

/** Why a task queue's jobs are not being fetched, as the worker that skipped it last saw it. */
export interface WaitingReason {
  reason: string;
  /** `Date.now()` of the worker when it found the queue blocked. */
  at: number;
  /** When that worker looks at the queue again (a rate limit's window may be long); 0 when soon. */
  until?: number;
}

/** A reason older than this (past its `until`) is stale: its worker fetched since, died, or the limit cleared. */
export const WAITING_REASON_TTL_MS = 5000;

function waitingKey(prefix: string): string {
  return `${prefix}:ax:waiting`;
}

/** Records (or with `null`, clears) why `queue` is skipped: read by `getRun` and `ax queues`. */
export async function setWaitingReason(redis: Redis, prefix: string, queue: string, reason: string | null, until = 0): Promise<void> {
  if (reason === null) await redis.hdel(waitingKey(prefix), queue);
  else await redis.hset(waitingKey(prefix), queue, JSON.stringify({ reason, at: Date.now(), until } satisfies WaitingReason));
}

/** The current reasons for the given task queues (stale ones left out). */
export async function waitingReasons(redis: Redis, prefix: string, queues: string[]): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  if (queues.length === 0) return found;
  const values = await redis.hmget(waitingKey(prefix), ...queues);
  queues.forEach((queue, i) => {
    const raw = values[i];
    if (!raw) return;
    const parsed = JSON.parse(raw) as WaitingReason;
    if (Date.now() - Math.max(parsed.at, parsed.until ?? 0) <= WAITING_REASON_TTL_MS) found.set(queue, parsed.reason);
  });
  return found;
}

export function parkedReasonsKey(prefix: string): string {
  return `${prefix}:ax:parked`;
}

/** Why a parked job (its key at its limit) waits; cleared when it is admitted. No TTL: a job may wait long. */
export async function setParkedReason(redis: Redis, prefix: string, jobId: string, reason: string | null): Promise<void> {
  if (reason === null) await redis.hdel(parkedReasonsKey(prefix), jobId);
  else await redis.hset(parkedReasonsKey(prefix), jobId, reason);
}

/** The reasons recorded for the given jobs (by job id). */
export async function parkedReasons(redis: Redis, prefix: string, jobIds: string[]): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  if (jobIds.length === 0) return found;
  const values = await redis.hmget(parkedReasonsKey(prefix), ...jobIds);
  jobIds.forEach((id, i) => {
    if (values[i]) found.set(id, values[i]!);
  });
  return found;
}
