import { setTimeout as sleep } from "node:timers/promises";
import { Job } from "bullmq";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import {
  GroupCommit,
  nodeInputsAnyStatus,
  unfinishedOldestFirst,
  waitingNodeInputs,
  type DagNode,
  type Db,
  type InputRequest,
  type NodeInputs,
} from "@ax/store";
import {
  describeBlocked,
  setParkedReason,
  type LimitGate,
  type LimitSpec,
  type NodeJobData,
  type Permit,
  type QueueRegistry,
  taskQueueName,
  type Waitlist,
} from "@ax/coordinator";
import type { DagCache } from "../dag-cache.js";
import { withDbRetry } from "../db-retry.js";
import { nodeArgs } from "../node-args.js";
import type { ResolvedTaskOptions } from "../task-definition.js";
import type { KeyStrategy } from "@ax/common";

/** What the dispatcher does with a fetched job whose task has limits per business key. */
export type Admission =
  | { ok: true; release?: () => Promise<void>; holdsKey?: boolean }
  /** The job moved itself out of the way (parked or delayed), or its run was cancelled: finish nothing, or complete it. */
  | { ok: false; finish: "none" | "complete" };

export interface KeyedAdmissionDeps {
  db: Db;
  redis: Redis;
  prefix: string;
  /** This worker, as a claim's holder in Redis. */
  workerId: string;
  gate: LimitGate;
  waitlist: Waitlist;
  dags: DagCache;
  log: Logger;
  /** Cancels a run, saying why (a key's `cancel_newest` / `cancel_in_progress` strategy). */
  cancelRun: (runId: string, reason: string) => Promise<unknown>;
  /** Puts a parked job (`queue|jobId`) back in its queue; false when the job is gone. */
  promote: (waiter: string) => Promise<boolean>;
  /** A task's options as they are now (live configuration), to wake a line by the limit in force. */
  optionsOf: (task: string) => ResolvedTaskOptions | undefined;
}

/**
 * A parked job is also delayed this long in BullMQ, as a safety net should its name be lost from
 * the key's line (Redis lost data): then it is fetched again and finds its place anew.
 */
const PARK_SAFETY_MS = 5 * 60_000;
/** How often each worker looks for parked jobs whose key came free without a release (its holder died). */
export const PARKED_SWEEP_MS = 2000;
/** A job waiting in its key's rate limit line comes back this long after its turn, not before it. */
const RATE_TURN_SLACK_MS = 5;

/**
 * Limits per business key (`concurrency: { max, key, strategy }`, `rateLimit: { max, per, key }`).
 * The key is read off the node's arguments, which exist only once its upstream finished, so it is
 * checked after the fetch: a job whose key is at its limit is parked (BullMQ delayed, its name in
 * the key's line) and woken by whoever frees a slot of that key; one its key's rate limit refused
 * waits in that limit's line, delayed until its turn. Each job is fetched about once more, however
 * long the line, so a key with thousands of waiting runs does not hold other keys back.
 */
export class KeyedAdmission {
  /** Inputs of jobs fetched at the same time are read in one statement. */
  private readonly inputs: GroupCommit<InputRequest, NodeInputs | undefined>;

  constructor(private readonly deps: KeyedAdmissionDeps) {
    this.inputs = new GroupCommit((requests) => waitingNodeInputs(deps.db, requests));
  }

  async admit(job: Job<NodeJobData>, token: string, queue: string, options: ResolvedTaskOptions): Promise<Admission> {
    return this.admitAs(job, token, queue, options, options.concurrencyKey?.strategy);
  }

  /** `strategy`: the key's, or `queue` for a `cancel_newest` job that is not the newest on its key. */
  private async admitAs(
    job: Job<NodeJobData>,
    token: string,
    queue: string,
    options: ResolvedTaskOptions,
    strategy: KeyStrategy | undefined,
  ): Promise<Admission> {
    const { concurrencyKey, rateLimitKey } = options;
    const d = this.deps;
    if (!concurrencyKey && !rateLimitKey) {
      // A job delayed by a per-key limit that the configuration has removed since: its reason goes.
      // Only a delayed job (a retry, a delayed run) can have one, so the rest skip the round trip.
      if (job.delay > 0) await d.waitlist.unpark([job.id!]);
      return { ok: true };
    }
    const { runId, nodeKey, attempt, flowVersionId } = job.data;
    const dag = await withDbRetry(() => d.dags.get(flowVersionId));
    const node = dag.nodes.get(nodeKey);
    const inputs = node ? await withDbRetry(() => this.inputs.submit({ runId, nodeKey, attempt, upstreamKeys: node.upstream })) : undefined;
    // A stale or duplicate job: the attempt fence drops it, no key needed. One woken from its key's
    // line (its run was cancelled between its fetch and its parking) holds a claim on the key's slot:
    // given up now, or the next in line would wait for the claim to lapse.
    if (!node || !inputs) {
      await d.waitlist.unpark([job.id!]);
      if (node && concurrencyKey && strategy !== "cancel_newest") {
        // Best effort: should it fail, the claim lapses on its own after a lease.
        await this.giveUpPlace(job, queue, options, node).catch((err: unknown) =>
          d.log.debug({ err, jobId: job.id }, "could not give up a stale job's place in its key's line"),
        );
      }
      return { ok: true };
    }
    const key = this.keyOf(options, nodeArgs(node, inputs.payload, inputs.upstream));
    const semKey = `${semaphorePrefix(options.name)}${key}`;
    const spec: LimitSpec = {
      semaphores: concurrencyKey ? [{ key: semKey, capacity: concurrencyKey.max, weight: 1, label: `concurrency key ${key}` }] : [],
      rates: rateLimitKey
        ? [{ key: `keyrate:${options.name}:${key}`, max: rateLimitKey.max, perMs: rateLimitKey.perMs, label: `rate limit key ${key}` }]
        : [],
    };
    const parking = concurrencyKey && strategy !== "cancel_newest";
    const fullReason = concurrencyKey ? `concurrency key ${key} (${concurrencyKey.max}/${concurrencyKey.max})` : "";
    const firstCome = strategy === "queue";
    const answer = await d.gate.acquire(spec, {
      park: parking ? d.waitlist.parkRequest(queue, job.id!, fullReason, firstCome, job.timestamp) : undefined,
      rateLine: rateLimitKey ? { waiter: `${queue}|${job.id}`, place: job.timestamp } : undefined,
    });
    if (answer.ok) {
      const release = () => this.release(answer.permit, semKey, options.name, concurrencyKey !== null);
      try {
        await d.waitlist.admitted(job.id!, concurrencyKey ? { key: semKey, permitId: answer.permit.id, runId } : undefined);
        if (strategy === "cancel_in_progress" && (await this.supersededOnAdmission(runId, semKey, fullReason, concurrencyKey!.max))) {
          await release();
          return { ok: false, finish: "complete" };
        }
      } catch (error) {
        await freeAfterFailure(release, error);
      }
      return {
        ok: true,
        release,
        holdsKey: concurrencyKey !== null,
      };
    }
    // Caught up with a newer config version meanwhile: admitted again by the key's limits in it.
    if (answer.blocked.kind === "stale") return this.admit(job, token, queue, d.optionsOf(options.name) ?? options);
    const reason = describeBlocked(answer.blocked);
    if (answer.blocked.kind === "rate") {
      // Back at its turn in the key's line (measured by Redis's clock), a few ms late rather than early.
      await job.moveToDelayed(Date.now() + answer.blocked.retryInMs + RATE_TURN_SLACK_MS, token);
      await setParkedReason(d.redis, d.prefix, job.id!, reason);
      return { ok: false, finish: "none" };
    }
    if (strategy === "cancel_newest") {
      // Only a run newer than one on the key is cancelled. The key held by another node of this
      // run, or by newer runs only (this run's retry came back after a newer one took the key),
      // makes it wait in the key's line instead.
      if (!(await this.olderRunOnKey(runId, semKey))) return this.admitAs(job, token, queue, options, "queue");
      await d.cancelRun(runId, `${reason} was busy: strategy cancel_newest`);
      return { ok: false, finish: "complete" };
    }
    if (strategy === "cancel_in_progress" && (await this.supersede(runId, semKey, `${queue}|${job.id}`, reason, concurrencyKey!.max))) {
      return { ok: false, finish: "complete" };
    }
    // Already in the key's line (the refusal put it there): now out of the fetchable queue.
    await job.moveToDelayed(Date.now() + PARK_SAFETY_MS, token);
    // It yielded a free slot to a job ahead of it in the line, which the refusal woke.
    if (answer.blocked.kind === "semaphore" && answer.blocked.woken.length > 0) {
      await this.promoteLine(semKey, concurrencyKey!.max, answer.blocked.woken);
    }
    return { ok: false, finish: "none" };
  }

  /**
   * `cancel_in_progress` for a run refused on its key (and put in its line): of the runs holding
   * the key or waiting for it, the newest `max` keep their places and every older one is
   * cancelled, so that a burst of runs of one key leaves the newest, whichever of their jobs
   * reached a worker first. Answers true when this run is one of those superseded.
   */
  private async supersede(runId: string, semKey: string, waiter: string, reason: string, max: number): Promise<boolean> {
    const d = this.deps;
    const unfinished = await this.unfinished(await this.runsOnKey(runId, semKey));
    const kept = unfinished.slice(-max);
    const why = `superseded by run ${kept.at(-1) ?? runId} on ${reason}: strategy cancel_in_progress`;
    if (kept.length > 0 && !kept.includes(runId)) {
      await d.waitlist.leave(semKey, waiter);
      await d.cancelRun(runId, why);
      return true;
    }
    for (const older of unfinished.slice(0, -max)) await d.cancelRun(older, why);
    return false;
  }

  /** Whether an unfinished run older than `runId` holds `semKey` or waits for it. */
  private async olderRunOnKey(runId: string, semKey: string): Promise<boolean> {
    const runs = await this.runsOnKey(runId, semKey);
    return runs.length > 1 && (await this.unfinished(runs)).indexOf(runId) > 0;
  }

  /** `runId` and the runs holding `semKey` or in its line. */
  private async runsOnKey(runId: string, semKey: string): Promise<string[]> {
    return [...new Set([runId, ...(await this.deps.waitlist.runsOn(semKey))])];
  }

  /** The unfinished ones of `runs`, oldest first. */
  private unfinished(runs: string[]): Promise<string[]> {
    return withDbRetry(() => unfinishedOldestFirst(this.deps.db, runs));
  }

  /**
   * `cancel_in_progress` for a run just admitted on its key: a newer run of the key refused a
   * moment before may have looked for the key's holders before this one was recorded as holding
   * it, and so not cancelled it; it is in the key's line by then, so this run, seeing it, cancels
   * itself. Answers true when it did.
   */
  private async supersededOnAdmission(runId: string, semKey: string, reason: string, max: number): Promise<boolean> {
    const runs = await this.runsOnKey(runId, semKey);
    // No more runs on the key than it may run at once, this one among them: none can supersede it,
    // and the usual admission (a key with one run) asks PostgreSQL nothing.
    if (runs.length <= max) return false;
    const kept = (await this.unfinished(runs)).slice(-max);
    if (kept.length === 0 || kept.includes(runId)) return false;
    await this.deps.cancelRun(runId, `superseded by run ${kept.at(-1)} on ${reason}: strategy cancel_in_progress`);
    return true;
  }

  /**
   * Counts a job that is already running against its key's `concurrency` limit, when that limit
   * was added (live configuration) after the job was admitted without one: otherwise the key could
   * run over its new limit for as long as the earlier attempts last. The slot is taken whatever the
   * capacity (the work is running) at the gate's next renew; the returned release frees it and
   * wakes the key's line like any other.
   */
  async adopt(job: Job<NodeJobData>, options: ResolvedTaskOptions): Promise<(() => Promise<void>) | undefined> {
    const { concurrencyKey } = options;
    if (!concurrencyKey) return undefined;
    const d = this.deps;
    const { runId, nodeKey, flowVersionId } = job.data;
    const node = (await withDbRetry(() => d.dags.get(flowVersionId))).nodes.get(nodeKey);
    const found = node && (await this.runningKeyOf(runId, node, options));
    if (!found) return undefined;
    const { key, semKey } = found;
    const permit = d.gate.adopt([{ key: semKey, capacity: concurrencyKey.max, weight: 1, label: `concurrency key ${key}` }]);
    const release = () => this.release(permit, semKey, options.name, true);
    await d.waitlist
      .admitted(job.id!, { key: semKey, permitId: permit.id, runId })
      .catch((error: unknown) => freeAfterFailure(release, error));
    return release;
  }

  /**
   * Wakes the parked jobs of keys that have room with no release to say so: a holder died (its
   * slot came free when its lease lapsed), or the key's limit of one of `tasks` was raised or
   * removed (live configuration) since they parked.
   */
  async sweep(tasks: readonly ResolvedTaskOptions[]): Promise<void> {
    const capacities = new Map(tasks.map((t) => [semaphorePrefix(t.name), t.concurrencyKey?.max]));
    for (const { key, waiter } of await this.deps.waitlist.sweep(capacities)) {
      const task = tasks.find((t) => key.startsWith(semaphorePrefix(t.name)));
      await this.promoteLine(key, task ? task.concurrencyKey?.max : null, [waiter]);
    }
  }

  /**
   * Puts back in its queue every job of `task` delayed by its rate limit per key: the limit was
   * raised or removed (live configuration) after their delays were computed by the old one, which
   * could hold them for its whole window (`per: 1h`). Fetched again, each asks the new limit.
   * One process does it per task and config version: every worker applies the version, and each
   * promoting every job would multiply the round trips by the number of workers.
   */
  async promoteRateDelayed(task: ResolvedTaskOptions, version: number): Promise<void> {
    const d = this.deps;
    const claim = `${d.prefix}:limits:rate-promote:${task.name}:v${version}`;
    if ((await d.redis.set(claim, d.workerId, "PX", PROMOTE_CLAIM_MS, "NX")) !== "OK") return;
    const queue = taskQueueName(task.queue, task.name);
    const parked = await d.waitlist.parkedBy(RATE_KEY_REASON);
    if (parked.length === 0) return;
    // Other tasks' jobs wait for their own limits: one queue per task tells them apart.
    const pipeline = d.redis.pipeline();
    for (const id of parked) pipeline.exists(`${d.prefix}:${queue}:${id}`);
    const exists = (await pipeline.exec()) ?? [];
    const mine = parked.filter((_, i) => exists[i]?.[1] === 1);
    // A long per-key window can leave thousands delayed: promoted a chunk at a time, each chunk's scripts in one round trip.
    for (let i = 0; i < mine.length; i += PROMOTE_CHUNK) {
      await Promise.all(mine.slice(i, i + PROMOTE_CHUNK).map((id) => d.promote(`${queue}|${id}`)));
    }
    await d.waitlist.unpark(mine);
  }

  /**
   * Promotes woken waiters of `semKey`. One whose job is gone (its run was cancelled while it
   * waited) gives its claim up at once, and whoever may go instead is woken. `capacity`: the
   * key's limit now (`undefined`: none any more); `null` when this process cannot tell (a task
   * it does not serve), and then the claim lapses on its own.
   */
  private async promoteLine(semKey: string, capacity: number | undefined | null, waiters: readonly string[]): Promise<void> {
    const d = this.deps;
    const queue = [...waiters];
    const woken: string[] = [];
    for (let waiter = queue.shift(); waiter !== undefined; waiter = queue.shift()) {
      woken.push(waiter.slice(waiter.indexOf("|") + 1));
      if (await d.promote(waiter)) continue;
      if (capacity !== null) queue.push(...(await d.waitlist.forget(semKey, capacity, waiter)));
    }
    // Woken, they no longer wait for their key: what holds them now is their queue's turn or limit.
    await d.waitlist.unpark(woken);
  }

  private async giveUpPlace(job: Job<NodeJobData>, queue: string, options: ResolvedTaskOptions, node: DagNode): Promise<void> {
    const found = await this.runningKeyOf(job.data.runId, node, options);
    if (!found) return;
    const capacity = options.concurrencyKey?.max;
    await this.promoteLine(found.semKey, capacity, await this.deps.waitlist.forget(found.semKey, capacity, `${queue}|${job.id}`));
  }

  /** The node's key, read off its inputs whatever its status (admission reads only waiting nodes'). */
  private async runningKeyOf(
    runId: string,
    node: DagNode,
    options: ResolvedTaskOptions,
  ): Promise<{ key: string; semKey: string } | undefined> {
    const inputs = await withDbRetry(() => nodeInputsAnyStatus(this.deps.db, runId, node.upstream));
    if (!inputs) return undefined;
    const key = this.keyOf(options, nodeArgs(node, inputs.payload, inputs.upstream));
    return { key, semKey: `${semaphorePrefix(options.name)}${key}` };
  }

  private keyOf(options: ResolvedTaskOptions, args: unknown[]): string {
    const limit = options.concurrencyKey ?? options.rateLimitKey!;
    try {
      return limit.key(args);
    } catch (err) {
      // Every node whose key cannot be read shares one key, so the limit still holds for them.
      this.deps.log.error(
        { err, task: options.name },
        `the concurrency key (${limit.keySource}) threw; the node is counted under the key "!error"`,
      );
      return "!error";
    }
  }

  private async release(permit: Permit, semKey: string, task: string, keyed: boolean): Promise<void> {
    const d = this.deps;
    await d.gate.release(permit);
    if (!keyed) return;
    // The limit in force now: one lowered meanwhile wakes fewer, one removed wakes the whole line.
    const capacity = d.optionsOf(task)?.concurrencyKey?.max;
    await this.promoteLine(semKey, capacity, await d.waitlist.wake(semKey, capacity, permit.id));
  }
}

/**
 * Gives back a permit whose admission failed part way (Redis reset between the gate and the line's
 * records), then throws `error`. Kept, the gate would renew it for as long as the process lives,
 * and the job, fetched again, would find its key full of itself. Freeing may fail too: the gate
 * has forgotten the permit by then, so its slot lapses with its lease.
 */
async function freeAfterFailure(release: () => Promise<void>, error: unknown): Promise<never> {
  await release().catch(() => undefined);
  throw error;
}

/** How long one process's claim to put back a task's rate-delayed jobs for a version stands. */
const PROMOTE_CLAIM_MS = 60_000;
/** Rate-delayed jobs promoted at once when a config version loosens their limit. */
const PROMOTE_CHUNK = 100;

/** How a parked job's reason starts when a rate limit per key delays it: "rate limit key user_42 2 per 1s". */
const RATE_KEY_REASON = "rate limit key ";

/** Where a task's semaphores per key start: `key:<task>:<key>`. */
const semaphorePrefix = (task: string) => `key:${task}:`;

/** How long a woken waiter's job may take to reach the delayed set (it joins the line a moment before). */
const PROMOTE_TRIES = 50;
const PROMOTE_PAUSE_MS = 20;

/**
 * Moves a parked job (`queue|jobId`) from delayed back to its queue. A job still active is on its
 * way to the delayed set (it joined the line first): it is tried again shortly. One waiting
 * already is left alone. Answers false for a job that is gone or finished (its run was cancelled
 * while it waited), whose place in the line is then given up.
 */
export async function promoteParked(queues: QueueRegistry, waiter: string, log: Logger): Promise<boolean> {
  const split = waiter.indexOf("|");
  const queue = queues.get(waiter.slice(0, split));
  const id = waiter.slice(split + 1);
  // Usually the job is delayed by now: promoted in one call, by id alone. BullMQ refuses a job
  // that is not delayed, and only then is its state read.
  try {
    await new Job(queue, "", {}, {}, id).promote();
    return true;
  } catch {}
  for (let tries = 0; tries < PROMOTE_TRIES; tries++) {
    const job = await queue.getJob(id);
    if (!job) return false;
    const state = await job.getState();
    if (state === "delayed") {
      await job.promote().catch((err: unknown) => log.debug({ err, waiter }, "a parked job left the delayed set meanwhile"));
      return true;
    }
    if (state === "completed" || state === "failed" || state === "unknown") return false;
    if (state !== "active") return true;
    await sleep(PROMOTE_PAUSE_MS);
  }
  log.warn({ waiter }, "a woken job stayed active; it comes back when its safety delay ends");
  return true;
}
