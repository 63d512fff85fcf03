import { DelayedError, type Job } from "bullmq";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import {
  closeRedis,
  describeBlocked,
  subscribeTo,
  wakeChannel,
  type Blocked,
  type LimitGate,
  type NodeJobData,
  type Permit,
  type WakeMessage,
} from "@ax/coordinator";
import type { LimitSpec } from "@ax/coordinator";
import { admitFetched, type Fetched } from "./admit-fetched.js";
import { lookAtQueues, type QueueLook } from "./empty-queue-look.js";
import { completeFetchingNext, mayFetchNext } from "./complete-fetching-next.js";
import type { Admission } from "./keyed-admission.js";
import { isLimited, isLimitedNow, type Unsatisfiable } from "./limit-spec.js";
import { LockExtender } from "./lock-extender.js";
import { MarkerWatch } from "./marker-watch.js";
import {
  announced,
  FETCHERS,
  idle,
  nextDelayedDue,
  IDLE_POLL_MS,
  isReady,
  onlyALook,
  openQueue,
  sleepMs,
  found,
  type QueueState,
  type ServedQueue,
} from "./queue-state.js";
import { Wakeup } from "./wakeup.js";
import { RepeatedErrors } from "@ax/coordinator";
import { RunningSlots, type AdoptKey, type EndedSlot } from "./running-slots.js";

export type { ServedQueue };

export interface DispatcherOptions {
  connection: Redis;
  prefix: string;
  workerId: string;
  queues: ServedQueue[];
  /** Attempts at once in this process, across all its queues. */
  concurrency: number;
  lockDurationMs: number;
  stalledIntervalMs: number;
  gate: LimitGate;
  /** The limits the task's next attempt must hold, from the live options. */
  limitsOf: (task: string) => LimitSpec | Unsatisfiable;
  /** Runs one job to its end; a thrown `DelayedError` means the job moved itself back to the queue. */
  process: (job: Job<NodeJobData>) => Promise<void>;
  /** Checked after the fetch, before the job runs: limits per business key (the key needs the job's input). */
  admit?: ((job: Job<NodeJobData>, token: string, queue: string) => Promise<Admission>) | undefined;
  /** Whether the task's live options limit it per business key. */
  hasKeyLimit?: ((task: string) => boolean) | undefined;
  /** Counts a job already running against its key's limit, added since it was admitted. */
  adoptKey?: AdoptKey | undefined;
  log: Logger;
}

/** A full semaphore is checked again this often even if no release message arrives (a holder whose lease lapsed). */
const LIMIT_RECHECK_MS = 1000;
/**
 * Fetches in flight at once from one limited queue, when its limits have that much room: one at a
 * time, a limited task ran at one fetch per two Redis round trips however many permits were free.
 * As many as an unlimited queue gets: 16 ran a limited no-op task about 15% faster than 8, with
 * less CPU per task (wider fetching paid for a lost block until 0.7.3, see `LimitBlock`).
 */
const LIMITED_FETCHERS = FETCHERS;

/**
 * Takes jobs across this process's task queues in turn (round robin), at most `concurrency` at
 * once, and learns of new jobs from BullMQ's markers (`MarkerWatch`). Before fetching from a task's queue it takes the task's cluster-wide limits from the
 * gate; a queue whose limit is reached is skipped without fetching, so a waiting node holds no
 * worker slot and stays in its queue. BullMQ's manual fetching is used (each queue's `Worker`
 * without a processor), with its stalled-job checker and lock renewal kept running here.
 */
export class Dispatcher {
  private readonly states: QueueState[];
  private readonly byName: Map<string, QueueState>;
  private readonly wakeup = new Wakeup();
  private readonly locks: LockExtender;
  private readonly markers: MarkerWatch<QueueState>;
  private readonly running = new Set<Promise<void>>();
  private readonly slots = new RunningSlots();
  private free: number;
  private cursor = 0;
  /** Freed-limit messages seen, so an acquire refused just before a release does not sleep through it. */
  private freed = 0;
  private tokens = 0;
  private stopping = false;
  private loops: Promise<void>[] = [];
  private subscriber: Redis | undefined;
  private unsubscribeFreed: (() => Promise<void>) | undefined;
  private renewTimer: NodeJS.Timeout | undefined;
  private readonly errors: RepeatedErrors;

  constructor(private readonly o: DispatcherOptions) {
    this.free = o.concurrency;
    this.locks = new LockExtender(o.lockDurationMs, o.log);
    this.errors = new RepeatedErrors(o.log);
    this.states = o.queues.map((q) => openQueue(q, { ...o, errors: this.errors }));
    this.byName = new Map(this.states.map((s) => [s.name, s]));
    this.markers = new MarkerWatch({
      connection: o.connection,
      log: o.log,
      queues: this.states,
      waitsFor: (state) => !this.stopping && state.finds < 2,
      pokeKey: `${o.prefix}:ax:marker-poke:${o.workerId}`,
      markerOf: (state) => state.worker.keys.marker!,
      onMarker: (state, at) => {
        announced(state, 1, at);
        this.wakeup.notify();
      },
    });
  }

  async start(): Promise<void> {
    await Promise.all(this.states.map((s) => s.worker.waitUntilReady()));
    this.subscriber = await subscribeTo(this.o.connection, this.o.log, "wake subscriber", wakeChannel(this.o.prefix), (message) =>
      this.onWake(message),
    );
    this.unsubscribeFreed = await this.o.gate.onFreed((keys) => this.onFreed(keys));
    for (const s of this.states) await s.worker.startStalledCheckTimer();
    this.markers.start();
    this.locks.start();
    this.renewTimer = setInterval(() => {
      this.slots.adoptAddedLimits(this.o.limitsOf, this.o.gate);
      if (this.o.hasKeyLimit && this.o.adoptKey) {
        const adopted = this.slots.adoptAddedKeys(this.o.hasKeyLimit, this.o.adoptKey, (err) =>
          this.errors.warn(err, {}, "could not count a running attempt against its key's new limit; retrying"),
        );
        // Into Redis once they are all read rather than at the next renewal, a second later: starts of those keys check them meanwhile.
        void adopted.then((n) => (n > 0 ? this.renewLimits() : undefined));
      }
      void this.renewLimits();
    }, 1000);
    this.renewTimer.unref();
    this.loops = Array.from({ length: Math.min(FETCHERS, this.o.concurrency) }, () => this.fetchLoop());
  }

  private async renewLimits(): Promise<void> {
    await this.o.gate.renew().catch((err) => this.errors.warn(err, {}, "could not renew limit leases; retrying"));
  }

  /** Fetches no more jobs; those running go on. */
  async stopFetching(): Promise<void> {
    this.stopping = true;
    this.wakeup.notify();
    await Promise.all([...this.loops, this.markers.stop()]);
  }

  /** Resolves once every fetched job has settled. */
  settled(): Promise<void> {
    return Promise.all([...this.running]).then(() => undefined);
  }

  /** Releases limits, stops timers and closes the queues' connections. */
  async close(): Promise<void> {
    await this.stopFetching();
    this.locks.stop();
    clearInterval(this.renewTimer);
    await this.unsubscribeFreed?.().catch(() => undefined);
    if (this.subscriber) closeRedis(this.subscriber);
    await this.o.gate.close().catch((err) => this.o.log.warn({ err }, "could not release limits; their leases lapse"));
    await Promise.all(this.states.map((s) => s.worker.close()));
  }

  /** Drops the queues' connections without waiting (Redis unreachable). */
  async disconnect(): Promise<void> {
    await Promise.all(this.states.map((s) => s.worker.disconnect()));
  }

  private async fetchLoop(): Promise<void> {
    while (!this.stopping) {
      if (this.free === 0) {
        await this.wakeup.wait();
        continue;
      }
      const state = this.nextReady();
      if (!state) {
        await this.wakeup.wait(sleepMs(this.states));
        continue;
      }
      if (onlyALook(state, Date.now())) {
        await this.lookAtEmptyQueues();
        continue;
      }
      this.free--;
      state.fetching++;
      let started = false;
      try {
        started = await this.fetchFrom(state);
      } catch (err) {
        this.o.log.warn({ err, queue: state.name }, "could not fetch from the queue; trying again shortly");
        state.idleUntil = Date.now() + IDLE_POLL_MS;
      } finally {
        const wasFull = state.fetching >= state.fetchWidth;
        state.fetching--;
        if (!started) this.free++;
        // Fetchers that found every queue at its width sleep until one of its fetches ends.
        if (wasFull && isReady(state, Date.now())) this.wakeup.notify();
        this.markers.changed(state);
      }
    }
  }

  /**
   * An empty queue is polled in case a job's announcement went to a process that could not take
   * it (its slots busy, or stopping): one look at every such queue at once, fetching only from
   * those that hold a job. Looked at together, they stay together, one round trip a second for all.
   */
  private async lookAtEmptyQueues(): Promise<void> {
    const now = Date.now();
    const states = this.states.filter((s) => onlyALook(s, now) && !s.block.blocks(now));
    const wakes = states.map((s) => s.wakes);
    // Not ready while the look is in flight, so that other fetchers do not look again.
    for (const s of states) s.idleUntil = s.dueAt === 0 ? now + IDLE_POLL_MS : Math.min(now + IDLE_POLL_MS, s.dueAt);
    let looks: QueueLook[];
    try {
      looks = await lookAtQueues(
        this.o.connection,
        states.map((s) => s.worker),
        now,
      );
    } catch (err) {
      this.errors.warn(err, {}, "could not look at the empty queues; trying again shortly");
      return;
    }
    states.forEach((state, i) => {
      // Announced or found a job meanwhile: what that set stands.
      if (state.wakes !== wakes[i] || !onlyALook(state, Date.now())) return;
      const { jobs, nextDue } = looks[i]!;
      if (jobs > 0) announced(state, jobs, undefined);
      else {
        idle(state, now, nextDue);
        state.reason.clear();
      }
    });
    this.wakeup.notify();
  }

  /** The next queue in turn that may have work and is not held by a limit. */
  private nextReady(): QueueState | undefined {
    const now = Date.now();
    for (let i = 0; i < this.states.length; i++) {
      const state = this.states[(this.cursor + i) % this.states.length]!;
      if (isReady(state, now)) {
        this.cursor = (this.cursor + i + 1) % this.states.length;
        return state;
      }
    }
    return undefined;
  }

  private async fetchFrom(state: QueueState): Promise<boolean> {
    const spec = this.o.limitsOf(state.task);
    state.limited = isLimitedNow(spec);
    let permit: Permit | undefined;
    if ("reason" in spec) {
      this.block(state, spec.reason, Date.now() + LIMIT_RECHECK_MS, []);
      return false;
    }
    if (isLimited(spec)) {
      const freed = this.freed;
      // A queue found empty with nothing announced since is only looked at: a refusal keeps no reserve.
      const answer = await this.o.gate.acquire(spec, { onlyALook: state.emptyAtWakes === state.wakes });
      if (!answer.ok) {
        // Caught up with a newer config version meanwhile: the next turn asks with its limits.
        if (answer.blocked.kind === "stale") return false;
        state.fetchWidth = 1;
        this.blockOn(state, answer.blocked, this.freed !== freed);
        return false;
      }
      permit = answer.permit;
      state.fetchWidth = Math.min(LIMITED_FETCHERS, 1 + answer.room);
      // Fetchers that found nothing to do sleep: the room just found is work for them.
      if (state.fetching < state.fetchWidth) this.wakeup.notify();
    }
    const token = `${this.o.workerId}:${++this.tokens}`;
    const wakes = state.wakes;
    const startedAt = Date.now();
    let job: Job<NodeJobData> | undefined;
    try {
      job = await state.worker.getNextJob(token, { block: false });
    } catch (err) {
      if (permit) await this.o.gate.release(permit, { unused: true }).catch(() => undefined);
      throw err;
    }
    if (!job) {
      if (permit) await this.o.gate.release(permit, { unused: true });
      if (state.wakes === wakes) idle(state, startedAt, nextDelayedDue(state.worker));
      state.reason.clear();
      return false;
    }
    state.reason.clear();
    found(state, state.wakes !== wakes);
    if (!state.limited && state.fetching < state.fetchWidth) this.wakeup.notify();
    const admitted = await admitFetched(this.o, state, job, token, permit);
    if (!admitted) return false;
    const running = this.run(state, admitted, token);
    this.running.add(running);
    void running.finally(() => this.running.delete(running));
    return true;
  }

  /** Runs a fetched job in one worker slot, then each next job its completion fetched (see `completeFetchingNext`). */
  private async run(state: QueueState, first: Fetched, token: string): Promise<void> {
    let fetched: Fetched | undefined = first;
    try {
      while (fetched) fetched = await this.runOne(state, fetched, token);
    } finally {
      this.free++;
      this.wakeup.notify();
      this.markers.changed(state);
    }
  }

  private async runOne(state: QueueState, { job, permit, releaseKeyed, holdsKey }: Fetched, token: string): Promise<Fetched | undefined> {
    this.locks.add(token, job);
    const slot = this.slots.begin(state.task, job, permit, holdsKey);
    let finish: () => Promise<unknown> = () => job.moveToCompleted(null, token, false);
    let completed = false;
    try {
      await this.o.process(job);
      completed = true;
    } catch (err) {
      if (err instanceof DelayedError) finish = async () => undefined;
      else {
        this.o.log.error({ err, jobId: job.id, queue: state.name }, "job processor threw; the reconciler will requeue the node");
        finish = () => job.moveToFailed(err as Error, token, false);
      }
    } finally {
      this.locks.delete(token);
    }
    const released = this.release(permit, releaseKeyed, this.slots.end(slot));
    // A limit added since this queue's last fetch through the gate stops fetching with the completion.
    state.limited = isLimitedNow(this.o.limitsOf(state.task));
    if (completed && !permit && mayFetchNext(state, this.states, this.stopping)) {
      const next = await completeFetchingNext(state, job, token, this.o.log);
      if (released) await released;
      return next && admitFetched(this.o, state, next, token, undefined);
    }
    await Promise.all([
      released,
      finish().catch((err) => this.o.log.debug({ err, jobId: job.id }, "could not close the BullMQ job; it is cleaned up as stalled")),
    ]);
    return undefined;
  }

  /** Gives back the limits a finished job held; nothing to wait for when it held none, as most jobs do. */
  private release(
    permit: Permit | undefined,
    releaseKeyed: (() => Promise<void>) | undefined,
    ended: EndedSlot,
  ): Promise<unknown> | undefined {
    const { permits, releaseKey } = ended;
    if (!permit && permits.length === 0 && !releaseKeyed && !releaseKey) return undefined;
    const all = permit ? [permit, ...permits] : permits;
    return Promise.all([...all.map((p) => this.o.gate.release(p)), releaseKeyed?.(), releaseKey?.()]).catch((err) =>
      this.o.log.warn({ err }, "could not release limits; they come back when their lease lapses"),
    );
  }

  /** `freedMeanwhile`: a limit was freed while the refused acquire was in flight, so try again at once. */
  private blockOn(state: QueueState, blocked: Exclude<Blocked, { kind: "stale" }>, freedMeanwhile: boolean): void {
    const reason = describeBlocked(blocked);
    // A rate slot an unused permit gives back (a fetch that found the queue empty) lifts the block early.
    if (blocked.kind === "rate") this.block(state, reason, Date.now() + Math.max(1, blocked.retryInMs), [blocked.key]);
    else this.block(state, reason, freedMeanwhile ? 0 : Date.now() + LIMIT_RECHECK_MS, [blocked.key]);
  }

  private block(state: QueueState, reason: string, until: number, keys: string[]): void {
    state.block.block(until, keys);
    state.reason.publish(reason, until);
  }

  private onWake(message: string): void {
    let wakes: WakeMessage[];
    try {
      wakes = JSON.parse(message) as WakeMessage[];
    } catch {
      return;
    }
    for (const wake of wakes) {
      const state = this.byName.get(wake.queue);
      if (state) announced(state, wake.jobs, wake.at);
    }
    this.wakeup.notify();
  }

  /** The limits of `tasks` changed (live configuration): their queues stop waiting on the old ones and are fetched again. */
  limitsChanged(tasks: readonly string[]): void {
    const changed = new Set(tasks);
    for (const state of this.states) if (changed.has(state.task)) state.block.block(0, []);
    this.wakeup.notify();
  }

  private onFreed(keys: string[]): void {
    this.freed++;
    const freed = new Set(keys);
    for (const state of this.states) state.block.released(freed);
    this.wakeup.notify();
  }
}
