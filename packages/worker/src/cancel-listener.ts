import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { cancelledRunIds, takenOverAttempts, type AttemptRef, type Db } from "@ax/store";
import { cancelChannel, closeRedis, subscribeTo, type CancelMessage } from "@ax/coordinator";
import { AxAttemptTakenOverError, AxCancelledError } from "@ax/common";
import { AttemptCancel } from "./attempt-cancel.js";

/** This process's attempts in flight, by run, each with what aborts it. */
export class InFlightAttempts {
  private readonly byRun = new Map<string, Set<AttemptCancel>>();
  private readonly refs = new Map<AttemptCancel, AttemptRef>();
  private idleWaiters: (() => void)[] = [];

  /**
   * Runs one attempt with a `cancel` signal. Registered before the attempt's fence, so a cancel
   * committed after the fence always finds it here.
   */
  async track<T>(ref: AttemptRef, attempt: (cancel: AttemptCancel) => Promise<T>): Promise<T> {
    const controller = new AttemptCancel();
    const { runId } = ref;
    const set = this.byRun.get(runId) ?? new Set();
    this.byRun.set(runId, set);
    set.add(controller);
    this.refs.set(controller, { runId, nodeKey: ref.nodeKey, attempt: ref.attempt });
    try {
      return await attempt(controller);
    } finally {
      set.delete(controller);
      this.refs.delete(controller);
      if (set.size === 0 && this.byRun.get(runId) === set) this.byRun.delete(runId);
      if (this.refs.size === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
    }
  }

  /** Resolves once no attempt is in flight. */
  idle(): Promise<void> {
    if (this.refs.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** The attempts in flight now. */
  attempts(): AttemptRef[] {
    return [...this.refs.values()];
  }

  /** Aborts every attempt in flight with `reason` (shutdown). */
  abortAll(reason: Error): void {
    for (const controller of this.refs.keys()) controller.abort(reason);
  }

  /** Aborts every in-flight attempt of the run; returns how many were aborted now. */
  abortRun(runId: string): number {
    let aborted = 0;
    for (const controller of this.byRun.get(runId) ?? []) if (controller.abort(new AxCancelledError(runId))) aborted += 1;
    return aborted;
  }

  /** Aborts the in-flight attempt `ref` with `reason`; true if it was in flight and not aborted yet. */
  abortAttempt(ref: AttemptRef, reason: Error): boolean {
    for (const [controller, tracked] of this.refs) {
      if (tracked.runId === ref.runId && tracked.nodeKey === ref.nodeKey && tracked.attempt === ref.attempt)
        return controller.abort(reason);
    }
    return false;
  }

  runIds(): string[] {
    return [...this.byRun.keys()];
  }
}

/**
 * Listens for cancels on the cluster's channel (a dedicated subscriber connection) and aborts
 * the matching in-flight attempts. Pub/sub is fire-and-forget, so `sweep()` (run on the worker's
 * heartbeat) asks PostgreSQL about the runs in flight and catches a message missed during a
 * Redis disconnect.
 */
export class CancelListener {
  private subscriber: Redis | undefined;

  constructor(
    private readonly connection: Redis,
    private readonly prefix: string,
    private readonly db: Db,
    private readonly inFlight: InFlightAttempts,
    private readonly log: Logger,
    private readonly workerId: string,
  ) {}

  async start(): Promise<void> {
    this.subscriber = await subscribeTo(this.connection, this.log, "cancel subscriber", cancelChannel(this.prefix), (text) =>
      this.onMessage(text),
    );
  }

  /**
   * Also aborts attempts taken over while this worker could not renew its lease (it stalled, or
   * lost PostgreSQL): their nodes run again elsewhere, and the function must not go on beside them.
   */
  async sweep(): Promise<void> {
    const runIds = this.inFlight.runIds();
    if (runIds.length === 0) return;
    for (const runId of await cancelledRunIds(this.db, runIds)) this.abort(runId, "sweep");
    for (const ref of await takenOverAttempts(this.db, this.inFlight.attempts())) {
      if (this.inFlight.abortAttempt(ref, new AxAttemptTakenOverError(this.workerId, ref.nodeKey, ref.attempt))) {
        this.log.warn({ ...ref }, "attempt taken over while this worker missed its lease: aborted it");
      }
    }
  }

  stop(): void {
    const subscriber = this.subscriber;
    this.subscriber = undefined;
    if (subscriber) closeRedis(subscriber);
  }

  private onMessage(text: string): void {
    let message: CancelMessage;
    try {
      message = JSON.parse(text) as CancelMessage;
    } catch {
      this.log.warn({ text: text.slice(0, 200) }, "ignoring a cancel message that is not JSON");
      return;
    }
    if (typeof message?.runId !== "string") return;
    this.abort(message.runId, "message");
  }

  private abort(runId: string, via: "message" | "sweep"): void {
    const aborted = this.inFlight.abortRun(runId);
    if (aborted > 0) this.log.info({ runId, aborted, via }, "run cancelled: aborted its in-flight attempts");
  }
}
