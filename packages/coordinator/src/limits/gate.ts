import { randomUUID } from "node:crypto";
import { AxLimitError, durationText } from "@ax/common";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import pino from "pino";
import { closeRedis, subscribeTo } from "../redis.js";
import { configVersionKey } from "./config-version.js";
import { ACQUIRE, RELEASE, RENEW, USAGE } from "./scripts.js";

/** At most `capacity` weight held at once, e.g. a pool's slots or a task's concurrency. */
export interface SemaphoreLimit {
  key: string;
  capacity: number;
  weight: number;
  /** What the limit is called in `waitingFor`: "pool core_db", "concurrency", "max_concurrency". */
  label: string;
}

/** At most `max` acquisitions in any window of `perMs`. */
export interface RateLimit {
  key: string;
  max: number;
  perMs: number;
  /** What the limit is called in `waitingFor`: "rate limit". */
  label: string;
}

/** Every limit one start must pass; they are taken together or not at all. */
export interface LimitSpec {
  semaphores: SemaphoreLimit[];
  rates: RateLimit[];
}

export type Blocked =
  | {
      kind: "semaphore";
      label: string;
      key: string;
      used: number;
      capacity: number;
      /** Slots the refused start takes. */
      weight: number;
      /** Slots kept free for a heavier start that was refused (see ACQUIRE), not this start's to take. */
      kept: number;
      /**
       * Waiters (`queue|jobId`) of the semaphore's line woken by a parking refusal: the refused
       * waiter yielded a free slot to one ahead of it. The caller promotes their jobs.
       */
      woken: readonly string[];
    }
  | { kind: "rate"; label: string; key: string; max: number; perMs: number; retryInMs: number }
  /**
   * Another process applies a newer config version (`version`) than the one the spec was built
   * from. This process has caught up, or tried to, before the answer: the caller builds its spec
   * again and asks again at once.
   */
  | { kind: "stale"; version: number };

export interface Permit {
  id: string;
  spec: LimitSpec;
}

/**
 * `room`: how many more permits of the same spec would have passed right after this one (the
 * tightest limit decides). A hint for how many fetches to make at once; others may take them first.
 */
export type Acquired = { ok: true; permit: Permit; room: number } | { ok: false; blocked: Blocked };

/**
 * Join the blocking semaphore's line when refused (see `Waitlist`), atomically with the refusal.
 * `reason` is recorded for `jobId` in the parked-reasons hash.
 */
export interface ParkRequest {
  /** Newcomers join the line even when a slot is free (strategy `queue`). */
  firstCome: boolean;
  /** The waiter's place in the line, lowest first: when its job became ready (ms). */
  place: number;
  waiter: string;
  jobId: string;
  reason: string;
  /** Redis keys: the set of semaphore keys with waiters, their capacities, the parked reasons. */
  waitingKeys: string;
  capacities: string;
  parkedReasons: string;
  /** How long a waiter woken from the line keeps its slot while its job travels (see `Waitlist`). */
  claimMs: number;
}

/**
 * Wait in a rate limit's line when refused by it (see RATE_LINE): runs of one key pass their rate
 * limit in the order they became ready, each told to come back at its turn.
 */
export interface RateLineRequest {
  waiter: string;
  /** The waiter's place in the line, lowest first: when its job became ready (ms). */
  place: number;
}

/** The live configuration the caller's limits come from (see config-version.ts). */
export interface GateConfig {
  /** The config version this process applies now (0: none). */
  version: () => number;
  /** Applies the newest stored version, if this process can; resolves once it tried. */
  catchUp: () => Promise<void>;
}

export interface LimitGateOptions {
  /** A holder that stops renewing loses its slots after this long. Default 5000 ms. */
  leaseMs?: number;
  /** Without it, every start is decided by the limits the caller passes, whatever version they come from. */
  config?: GateConfig | undefined;
  /** Where the pub/sub connections of `onFreed` report their errors. */
  log?: Logger;
}

export const DEFAULT_LIMIT_LEASE_MS = 5000;

/** Where a gate built without a logger sends its subscriber's connection errors: nowhere. */
const silentLog = pino({ level: "silent" });

/** The scripts as ioredis runs them once `defineCommand` has registered them (EVALSHA, EVAL on a cache miss). */
interface GateCommands {
  /** See ACQUIRE for what each element means; the waiters woken by a parking refusal come last. */
  axLimitAcquire(numKeys: number, ...args: (string | number)[]): Promise<[number, number?, number?, number?, ...string[]]>;
  axLimitUsage(numKeys: number, ...args: (string | number)[]): Promise<number[]>;
  axLimitRenew(numKeys: number, ...args: (string | number)[]): Promise<number[]>;
  axLimitRelease(numKeys: number, ...args: (string | number)[]): Promise<number>;
}

const member = (sem: SemaphoreLimit, permitId: string) => `${sem.weight}:${permitId}`;

function validate(spec: LimitSpec): void {
  const seen = new Set<string>();
  for (const limit of [...spec.semaphores, ...spec.rates]) {
    if (seen.has(limit.key)) {
      throw new AxLimitError(limit.label, limit.key, "is named twice in one request; give every limit its own key");
    }
    seen.add(limit.key);
  }
  for (const sem of spec.semaphores) {
    if (!Number.isInteger(sem.weight) || sem.weight < 1) {
      throw new AxLimitError(sem.label, sem.key, `a start takes ${sem.weight} slots; slots must be a whole number of at least 1`);
    }
    if (!Number.isInteger(sem.capacity) || sem.weight > sem.capacity) {
      throw new AxLimitError(
        sem.label,
        sem.key,
        `a start takes ${sem.weight} slots but the limit has ${sem.capacity}, so it could never start; raise the limit or take fewer slots`,
      );
    }
  }
  for (const rate of spec.rates) {
    if (!Number.isInteger(rate.max) || rate.max < 1 || !Number.isInteger(rate.perMs) || rate.perMs < 1) {
      throw new AxLimitError(
        rate.label,
        rate.key,
        `${rate.max} per ${rate.perMs} ms lets nothing start; max must be a whole number of at least 1 and per at least 1 ms`,
      );
    }
  }
}

/**
 * Cluster-wide semaphores and rate limits in Redis, taken all or nothing by one Lua script.
 * Semaphore slots are leased: `renew()` extends every permit this gate holds, and a holder that
 * stops renewing (its process died) loses its slots `leaseMs` later, the next time anyone
 * acquires or reads usage. Capacities come with each call, so a resized limit applies at once;
 * a limit lowered below its use blocks until use drops.
 */
export class LimitGate {
  private readonly commands: GateCommands;
  private readonly leaseMs: number;
  /** Where BullMQ keeps a job of the same prefix: `<prefix>:<queue>:<job id>`. */
  private readonly jobPrefix: string;
  private readonly semPrefix: string;
  private readonly ratePrefix: string;
  private readonly channel: string;
  /** Byte offset (1-based, for Lua) of the caller's key inside a semaphore's Redis key. */
  private readonly nameFrom: number;
  /** The same inside a rate limit's Redis key. */
  private readonly rateNameFrom: number;
  private readonly held = new Map<string, Permit>();
  private readonly subscribers = new Set<Redis>();
  private readonly versionKey: string;
  /**
   * The newest version this process tried to catch up to: it counts as being on it even when it
   * could not apply it (a version its code cannot read, or a mark left by a history since reset),
   * so that it asks once, not at every start.
   */
  private caughtUpTo = 0;

  constructor(
    private readonly redis: Redis,
    prefix: string,
    private readonly options: LimitGateOptions = {},
  ) {
    this.leaseMs = options.leaseMs ?? DEFAULT_LIMIT_LEASE_MS;
    // Scores are whole milliseconds: Lua prints a fractional one rounded to 14 digits.
    if (!Number.isInteger(this.leaseMs) || this.leaseMs < 1) {
      throw new RangeError(`LimitGate leaseMs must be a whole number of milliseconds, at least 1; got ${this.leaseMs}`);
    }
    this.jobPrefix = `${prefix}:`;
    this.semPrefix = `${prefix}:limits:sem:`;
    this.ratePrefix = `${prefix}:limits:rate:`;
    this.channel = `${prefix}:limits:freed`;
    this.nameFrom = Buffer.byteLength(this.semPrefix) + 1;
    this.rateNameFrom = Buffer.byteLength(this.ratePrefix) + 1;
    this.versionKey = configVersionKey(prefix);
    redis.defineCommand("axLimitAcquire", { lua: ACQUIRE });
    redis.defineCommand("axLimitUsage", { lua: USAGE });
    redis.defineCommand("axLimitRenew", { lua: RENEW });
    redis.defineCommand("axLimitRelease", { lua: RELEASE });
    this.commands = redis as unknown as GateCommands;
  }

  /**
   * Takes every semaphore and rate slot of `spec`, or none. Throws `AxLimitError` for a spec no
   * start could ever pass. A call that fails in transit may have taken its slots: nothing renews
   * them, so they come back within the lease. `park`: join the blocking semaphore's line when
   * refused. `onlyALook`: the caller does not know that it has a start to make (it polls a queue
   * last found empty), so a refused heavy start keeps no slots in reserve: an idle task's polls
   * would otherwise hold slots back from the tasks that have work. `rateLine`: wait in each rate
   * limit's line when refused; a waiter that lets its turn pass by a lease loses its place, and
   * one whose job (`queue|jobId`, on this gate's prefix) is gone loses it once its turn came. With
   * `config`, a process whose version is older than another's is answered `stale` after catching
   * up, and takes nothing.
   */
  async acquire(
    spec: LimitSpec,
    {
      park,
      onlyALook = false,
      rateLine,
    }: { park?: ParkRequest | undefined; onlyALook?: boolean; rateLine?: RateLineRequest | undefined } = {},
  ): Promise<Acquired> {
    validate(spec);
    const id = randomUUID();
    const keys = [...spec.semaphores.map((s) => this.semPrefix + s.key), ...spec.rates.map((r) => this.ratePrefix + r.key)];
    const config = this.options.config;
    const version = config ? Math.max(config.version(), this.caughtUpTo) : "";
    const args: (string | number)[] = [id, this.leaseMs, spec.semaphores.length, this.channel, this.nameFrom, this.versionKey, version];
    for (const sem of spec.semaphores) args.push(sem.capacity, sem.weight);
    for (const rate of spec.rates) args.push(rate.max, rate.perMs);
    if (park)
      args.push(
        park.waiter,
        park.jobId,
        park.waitingKeys,
        park.capacities,
        park.parkedReasons,
        park.reason,
        park.firstCome ? "1" : "",
        park.place,
        park.claimMs,
      );
    else if (onlyALook || rateLine) args.push("", "", "", "", "", "", "", "", "");
    if (onlyALook || rateLine) args.push(onlyALook ? "1" : "");
    if (rateLine) args.push(rateLine.waiter, rateLine.place, this.leaseMs, this.jobPrefix);
    const [ok, index, value, kept, ...woken] = await this.commands.axLimitAcquire(keys.length, ...keys, ...args);
    if (ok === -1) {
      await this.catchUp(index!);
      return { ok: false, blocked: { kind: "stale", version: index! } };
    }
    if (ok === 1) {
      const permit = { id, spec };
      this.held.set(id, permit);
      return { ok: true, permit, room: index ?? 0 };
    }
    const at = index! - 1;
    if (at < spec.semaphores.length) {
      const { label, key, capacity, weight } = spec.semaphores[at]!;
      return { ok: false, blocked: { kind: "semaphore", label, key, used: value!, capacity, weight, kept: kept ?? 0, woken } };
    }
    const { label, key, max, perMs } = spec.rates[at - spec.semaphores.length]!;
    return { ok: false, blocked: { kind: "rate", label, key, max, perMs, retryInMs: value! } };
  }

  private async catchUp(newest: number): Promise<void> {
    try {
      await this.options.config!.catchUp();
    } catch (err) {
      (this.options.log ?? silentLog).warn(
        { err, version: newest },
        "could not catch up with the newest config version; deciding by the limits in force here",
      );
    }
    this.caughtUpTo = Math.max(this.caughtUpTo, newest);
  }

  /**
   * Counts work already running against `semaphores` it took no slot of: a limit added to a task
   * while attempts of it run. The permit is taken whatever the capacity (the work is running) at
   * the next `renew`, which puts back a held permit missing from Redis, and is released as usual.
   */
  adopt(semaphores: SemaphoreLimit[]): Permit {
    const permit = { id: randomUUID(), spec: { semaphores, rates: [] } };
    this.held.set(permit.id, permit);
    return permit;
  }

  /**
   * Frees the permit's semaphore slots and tells every `onFreed` listener of those that refused a
   * request since they last freed a slot (nobody waits on the others). `unused` also gives back
   * its rate slots: the start it paid for never happened (the queue was empty).
   */
  async release(permit: Permit, opts: { unused?: boolean } = {}): Promise<void> {
    // Forgotten before the round trip, so a renew sent meanwhile cannot put the slots back.
    this.held.delete(permit.id);
    const { semaphores } = permit.spec;
    const rates = opts.unused ? permit.spec.rates : [];
    if (semaphores.length + rates.length === 0) return;
    const keys = [...semaphores.map((s) => this.semPrefix + s.key), ...rates.map((r) => this.ratePrefix + r.key)];
    await this.commands.axLimitRelease(
      keys.length,
      ...keys,
      this.channel,
      this.nameFrom,
      semaphores.length,
      permit.id,
      this.rateNameFrom,
      ...semaphores.map((s) => member(s, permit.id)),
    );
  }

  /**
   * Extends the lease of every permit this gate holds, in one round trip. A permit whose lease had
   * already lapsed (the process stalled longer than the lease) is put back, since its work is still
   * running; its limit may be over capacity until that work ends. Returns those permits.
   */
  async renew(): Promise<Permit[]> {
    const pairs = [...this.held.values()].flatMap((permit) => permit.spec.semaphores.map((sem) => ({ permit, sem })));
    if (!pairs.length) return [];
    const lapsed = await this.commands.axLimitRenew(
      pairs.length,
      ...pairs.map(({ sem }) => this.semPrefix + sem.key),
      this.leaseMs,
      ...pairs.map(({ permit, sem }) => member(sem, permit.id)),
    );
    return [...new Set(lapsed.map((i) => pairs[i - 1]!.permit))];
  }

  /** Weight held on each semaphore right now, expired holders dropped first. */
  async usage(keys: string[]): Promise<Map<string, number>> {
    if (!keys.length) return new Map();
    const used = await this.commands.axLimitUsage(keys.length, ...keys.map((k) => this.semPrefix + k), this.channel, this.nameFrom);
    return new Map(keys.map((k, i) => [k, used[i]!]));
  }

  /**
   * Calls `cb` with the keys of the semaphores some process freed (a release, or an expired holder
   * dropped), and of the rate limits an unused permit gave a slot back to, after they refused a
   * request. A hint to retry at once, not a guarantee: a waiter must
   * also retry on its own, at least once per lease, because a holder that died frees its slots
   * without a message until someone asks for them.
   */
  async onFreed(cb: (keys: string[]) => void): Promise<() => Promise<void>> {
    const subscriber = await subscribeTo(this.redis, this.options.log ?? silentLog, "limits", this.channel, (message) =>
      cb(JSON.parse(message) as string[]),
    );
    this.subscribers.add(subscriber);
    return async () => {
      this.subscribers.delete(subscriber);
      closeRedis(subscriber);
    };
  }

  /** Releases every permit still held and closes the `onFreed` connections. */
  async close(): Promise<void> {
    for (const subscriber of this.subscribers) closeRedis(subscriber);
    this.subscribers.clear();
    await Promise.all([...this.held.values()].map((permit) => this.release(permit)));
  }
}

/**
 * Why a start waits, for `TaskRunInfo.waitingFor`: "pool core_db (25/25)", "concurrency 2/2",
 * "rate limit 5 per 1s". A label that names something (a pool, a key) sets the count apart in
 * parentheses so it cannot be read as part of the name. A count that looks like room says why it
 * is none: "pool core_db (2/3, needs 2)", "pool core_db (1/3, 2 kept for a start that needs 2)".
 */
export function describeBlocked(b: Blocked): string {
  if (b.kind === "stale") return `config v${b.version} reaching this process`;
  if (b.kind === "rate") return `${b.label} ${b.max} per ${durationText(b.perMs)}`;
  // A full count needs no reserve to explain it.
  const kept = b.kept > 0 && b.used < b.capacity;
  const why = [...(b.weight > 1 ? [`needs ${b.weight}`] : []), ...(kept ? [`${b.kept} kept for a start that needs ${b.kept}`] : [])];
  const count = [`${b.used}/${b.capacity}`, ...why].join(", ");
  return b.label.includes(" ") || why.length > 0 ? `${b.label} (${count})` : `${b.label} ${count}`;
}
