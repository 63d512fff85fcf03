import type { ChainableCommander, Redis } from "ioredis";
import { DEFAULT_LIMIT_LEASE_MS, type ParkRequest } from "./gate.js";
import { parkedReasonsKey } from "../wake.js";
import { runIdOfJob } from "../queues.js";
import { CLAIMS, PRELUDE, SEMAPHORE } from "./scripts.js";

/**
 * Who waits for a busy semaphore, in the order their jobs became ready, so that a limit per
 * business key does not make workers fetch the same parked jobs again and again. A job whose key
 * is busy joins the key's line (by `LimitGate.acquire`, in the same step that refuses it), then
 * moves to BullMQ's delayed set with a long safety delay. Whoever frees a slot of that key pops
 * the next names and promotes their jobs; a name popped before its job reached the delayed set is
 * promoted again a moment later. A sweep on every worker pops for keys whose holder died (its
 * lease lapsed with no release), so nothing waits for the safety delay unless Redis itself lost
 * the line.
 *
 * Keys: `<prefix>:limits:sem:<key>` is the gate's semaphore; `…:line` its line (a ZSET scored by
 * when each job became ready); `…:woken` and `…:woken-at` the claims of woken waiters on their
 * way (see CLAIMS in scripts.ts); `…:holders` a hash permit id -> run id (for `cancel_in_progress`);
 * `<prefix>:limits:waiting-keys` the set of semaphore keys that have waiters, with their
 * capacities in `<prefix>:limits:waiting-capacity`.
 */

/**
 * KEYS: semaphore, its line, waiting-keys set, holders hash, capacities hash. ARGV: capacity, key,
 * the released permit's id, claim ms. Forgets the permit's holder, then wakes as many waiters as
 * there is room for. A line left empty takes its key out of the set and its capacity out of the
 * hash: with a key per order id, anything kept per key would grow for ever.
 */
const WAKE = `${PRELUDE}${SEMAPHORE}${CLAIMS}
redis.call('HDEL', KEYS[4], ARGV[3])
local woken = wakeLine(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[4]))
if redis.call('ZCARD', KEYS[2]) == 0 then
  redis.call('SREM', KEYS[3], ARGV[2])
  redis.call('HDEL', KEYS[5], ARGV[2])
end
return woken
`;

/**
 * KEYS: semaphore, waiting-keys set, capacities hash. ARGV: capacity, key, the woken waiter whose
 * job is gone, claim ms. Drops its claim (its run was cancelled while it waited) and wakes whoever
 * may go instead.
 */
const FORGET = `${PRELUDE}${SEMAPHORE}${CLAIMS}
unclaim(KEYS[1], ARGV[3])
local woken = wakeLine(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[4]))
if redis.call('ZCARD', KEYS[1] .. ':line') == 0 then
  redis.call('SREM', KEYS[2], ARGV[2])
  redis.call('HDEL', KEYS[3], ARGV[2])
end
return woken
`;

/**
 * KEYS: waiting-keys set, capacities hash. ARGV: semaphore key prefix, SSCAN cursor, claim ms,
 * then pairs of (key prefix, capacity now) that override the capacity stored when the
 * waiters parked, -1 for a limit that no longer exists (every waiter may go).
 */
const SWEEP = `${PRELUDE}${SEMAPHORE}${CLAIMS}
local overrides = {}
for i = 4, #ARGV, 2 do overrides[#overrides + 1] = {ARGV[i], tonumber(ARGV[i + 1])} end
local function capacityOf(key)
  for _, o in ipairs(overrides) do
    if string.sub(key, 1, #o[1]) == o[1] then return o[2] end
  end
  return tonumber(redis.call('HGET', KEYS[2], key) or '1')
end
local scan = redis.call('SSCAN', KEYS[1], ARGV[2], 'COUNT', 100)
local woken = {scan[1]}
for _, key in ipairs(scan[2]) do
  local sem = ARGV[1] .. key
  for _, w in ipairs(wakeLine(sem, capacityOf(key), tonumber(ARGV[3]))) do
    woken[#woken + 1] = key
    woken[#woken + 1] = w
  end
  if redis.call('ZCARD', sem .. ':line') == 0 then
    redis.call('SREM', KEYS[1], key)
    redis.call('HDEL', KEYS[2], key)
  end
end
return woken
`;

/** Pages of about 100 waiting keys one sweep looks at, at most: 1,000 keys every 2 s per worker. */
const SWEEP_PAGES = 10;

interface WaitlistCommands {
  axWaitWake(numKeys: number, ...args: (string | number)[]): Promise<string[]>;
  axWaitForget(numKeys: number, ...args: (string | number)[]): Promise<string[]>;
  axWaitSweep(numKeys: number, ...args: (string | number)[]): Promise<string[]>;
}

/** A key with waiters, as `ax queues --keys` lists them. */
export interface BusyKey {
  key: string;
  waiting: number;
  running: number;
}

export class Waitlist {
  private readonly commands: WaitlistCommands;
  private readonly semPrefix: string;
  private readonly waitingKeys: string;
  private readonly capacities: string;
  /** Where the next sweep goes on in the waiting-keys set ("0": from its start). */
  private sweepCursor = "0";

  /**
   * `claimMs`: how long a woken waiter's slot is kept for it while its job comes back to a worker.
   * A line's order survives any number of worker processes only while claims outlast that trip.
   */
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly claimMs = DEFAULT_LIMIT_LEASE_MS,
  ) {
    this.semPrefix = `${prefix}:limits:sem:`;
    this.waitingKeys = `${prefix}:limits:waiting-keys`;
    this.capacities = `${prefix}:limits:waiting-capacity`;
    redis.defineCommand("axWaitWake", { lua: WAKE });
    redis.defineCommand("axWaitForget", { lua: FORGET });
    redis.defineCommand("axWaitSweep", { lua: SWEEP });
    this.commands = redis as unknown as WaitlistCommands;
  }

  /**
   * What `LimitGate.acquire` needs to put a refused job (`queue|jobId`) in its key's line, at
   * `place`: when the job became ready (BullMQ's timestamp), so the line keeps that order.
   */
  parkRequest(queue: string, jobId: string, reason: string, firstCome: boolean, place: number): ParkRequest {
    return {
      firstCome,
      place,
      waiter: `${queue}|${jobId}`,
      jobId,
      reason,
      waitingKeys: this.waitingKeys,
      capacities: this.capacities,
      parkedReasons: parkedReasonsKey(this.prefix),
      claimMs: this.claimMs,
    };
  }

  /**
   * After the permit `permitId` of `key` was released: its holder forgotten and the waiters that
   * may start now, first come first, in one call. `capacity`: the key's limit now, `undefined`
   * when it no longer has one (the whole line may go).
   */
  wake(key: string, capacity: number | undefined, permitId: string): Promise<string[]> {
    const sem = this.semPrefix + key;
    return this.commands.axWaitWake(
      5,
      sem,
      `${sem}:line`,
      this.waitingKeys,
      `${sem}:holders`,
      this.capacities,
      capacity ?? -1,
      key,
      permitId,
      this.claimMs,
    );
  }

  /**
   * Waiters, of up to SWEEP_PAGES pages of waiting keys, that may start now: their slots came free
   * without a release (a holder died), or their limit was raised or removed since they parked.
   * `capacities` gives the limit in force now for keys starting with each prefix (`undefined`: none
   * any more); other keys keep the capacity they parked with.
   */
  async sweep(capacities: ReadonlyMap<string, number | undefined> = new Map()): Promise<{ key: string; waiter: string }[]> {
    const overrides = [...capacities].flatMap(([prefix, capacity]) => [prefix, capacity ?? -1]);
    const woken: { key: string; waiter: string }[] = [];
    // Walks the set from where the last sweep stopped, so every key is looked at within a few
    // sweeps however many wait (a random pick of 100 could leave one of thousands for minutes).
    for (let page = 0; page < SWEEP_PAGES; page++) {
      const [cursor, ...pairs] = await this.commands.axWaitSweep(
        2,
        this.waitingKeys,
        this.capacities,
        this.semPrefix,
        this.sweepCursor,
        this.claimMs,
        ...overrides,
      );
      this.sweepCursor = cursor ?? "0";
      for (let i = 0; i < pairs.length; i += 2) woken.push({ key: pairs[i]!, waiter: pairs[i + 1]! });
      if (this.sweepCursor === "0") break;
    }
    return woken;
  }

  /**
   * A woken waiter whose job is gone (its run was cancelled while it waited in line): its claim is
   * dropped at once, not kept for a lease, and the waiters that may go instead are woken.
   * `capacity`: the key's limit now, `undefined` when it no longer has one.
   */
  forget(key: string, capacity: number | undefined, waiter: string): Promise<string[]> {
    return this.commands.axWaitForget(
      3,
      this.semPrefix + key,
      this.waitingKeys,
      this.capacities,
      capacity ?? -1,
      key,
      waiter,
      this.claimMs,
    );
  }

  /**
   * A job admitted under its key's limits: its parked reason, if it had one, is cleared and, for
   * a concurrency key, the run holding permit `permitId` of `key` is recorded (for
   * `cancel_in_progress`). One round trip for both.
   */
  async admitted(jobId: string, hold?: { key: string; permitId: string; runId: string }): Promise<void> {
    const pipeline = this.redis.pipeline().hdel(parkedReasonsKey(this.prefix), jobId);
    if (hold) pipeline.hset(`${this.semPrefix}${hold.key}:holders`, hold.permitId, hold.runId);
    await answersOf(pipeline);
  }

  /**
   * The runs holding `key` now (a dead holder's run may linger until its lease lapses), waiting in
   * its line, or woken and on their way, in one round trip: whom `cancel_in_progress` weighs.
   */
  async runsOn(key: string): Promise<string[]> {
    const sem = this.semPrefix + key;
    const [holders, line, woken] = (await answersOf(
      this.redis.pipeline().hvals(`${sem}:holders`).zrange(`${sem}:line`, 0, -1).zrange(`${sem}:woken`, 0, -1),
    )) as string[][];
    // A waiter is `queue|jobId`.
    const waiting = [...line!, ...woken!].map((w) => runIdOfJob(w.slice(w.indexOf("|") + 1)));
    return [...new Set([...holders!, ...waiting])].filter((id): id is string => id !== undefined);
  }

  /** Takes `waiter` out of `key`'s line, with its parked reason: its run was cancelled before it was woken. */
  async leave(key: string, waiter: string): Promise<void> {
    await answersOf(
      this.redis
        .pipeline()
        .zrem(`${this.semPrefix}${key}:line`, waiter)
        .hdel(parkedReasonsKey(this.prefix), waiter.slice(waiter.indexOf("|") + 1)),
    );
  }

  /**
   * Forgets why these jobs were parked: they were woken (a limit changed or a slot came free),
   * or their runs ended. A job refused again on its next fetch is parked again with its reason.
   */
  async unpark(jobIds: string[]): Promise<void> {
    if (jobIds.length > 0) await this.redis.hdel(parkedReasonsKey(this.prefix), ...jobIds);
  }

  /** The jobs parked with a reason starting with `reasonPrefix`, read a thousand at a time. */
  async parkedBy(reasonPrefix: string): Promise<string[]> {
    const jobs: string[] = [];
    let cursor = "0";
    do {
      const [next, pairs] = await this.redis.hscan(parkedReasonsKey(this.prefix), cursor, "COUNT", 1000);
      cursor = next;
      for (let i = 0; i < pairs.length; i += 2) if (pairs[i + 1]!.startsWith(reasonPrefix)) jobs.push(pairs[i]!);
    } while (cursor !== "0");
    return jobs;
  }

  /** Keys starting with `keyPrefix` that have waiters, busiest first. */
  async busiest(keyPrefix: string, limit: number): Promise<BusyKey[]> {
    const keys = (await this.redis.smembers(this.waitingKeys)).filter((k) => k.startsWith(keyPrefix));
    if (keys.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const key of keys) {
      pipeline.zcard(`${this.semPrefix}${key}:line`);
      pipeline.zcard(`${this.semPrefix}${key}`);
    }
    const answers = (await pipeline.exec()) ?? [];
    return keys
      .map((key, i) => ({
        key: key.slice(keyPrefix.length),
        waiting: Number(answers[2 * i]?.[1] ?? 0),
        running: Number(answers[2 * i + 1]?.[1] ?? 0),
      }))
      .sort((a, b) => b.waiting - a.waiting)
      .slice(0, limit);
  }
}

/** A pipeline's answers in order, or its first error thrown. */
async function answersOf(pipeline: ChainableCommander): Promise<unknown[]> {
  const answers = (await pipeline.exec()) ?? [];
  const failed = answers.find(([error]) => error);
  if (failed) throw failed[0];
  return answers.map(([, value]) => value);
}
