import { setTimeout as sleep } from "node:timers/promises";
import { cancelRun, describeSchedules, setPaused, triggerRun, type CancelResult, type ScheduleInfo } from "@ax/coordinator";
import {
  getRunInfo,
  latestFlowVersion,
  listRunSummaries,
  runStatus,
  TERMINAL_RUN_STATUSES,
  type FlowVersion,
  type RunFilter,
  type RunInfo,
  type RunSummary,
} from "@ax/store";
import type { Flow } from "./definition/flow.js";
import { parseDuration, type Duration } from "./duration.js";
import { openConnections, type ConnectionOptions, type Connections } from "./connections.js";
import { AxRunNotFoundError, AxWaitTimeoutError } from "@ax/common";

export interface ClientOptions extends ConnectionOptions {
  /** Flows whose `idempotencyKey`/`businessKey` functions should apply to triggers from here. */
  flows?: Flow<any>[] | undefined;
  /** @defaultValue 1 MiB */
  maxPayloadBytes?: number | undefined;
}

export interface TriggerOptions {
  idempotencyKey?: string | undefined;
  businessKey?: string | undefined;
}

const FLOW_CACHE_MS = 5000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** What producer services and tools use: trigger runs and read their history. */
export class Client {
  private readonly connections: Connections;
  private readonly ownsConnections: boolean;
  private readonly flows: Map<string, Flow<any>>;
  private readonly versions = new Map<string, { at: number; version: Promise<FlowVersion | undefined> }>();

  constructor(private readonly options: ClientOptions = {}, shared?: Connections) {
    this.connections = shared ?? openConnections(options);
    this.ownsConnections = !shared;
    this.flows = new Map((options.flows ?? []).map((f) => [f.name, f]));
  }

  /** Starts a run; with an idempotency key already used for this flow, returns that run's id. */
  async triggerFlow(flow: string, payload: unknown, options: TriggerOptions = {}): Promise<string> {
    const defined = this.flows.get(flow)?.options;
    const triggered = await triggerRun(
      {
        writer: this.connections.writer,
        maxPayloadBytes: this.options.maxPayloadBytes,
        resolveFlow: (name) => this.flowVersion(name),
      },
      {
        flow,
        payload,
        trigger: "manual",
        idempotencyKey: options.idempotencyKey ?? defined?.idempotencyKey?.(payload),
        businessKey: options.businessKey ?? defined?.businessKey?.(payload),
      },
    );
    return triggered.runId;
  }

  async getRun(runId: string): Promise<RunInfo> {
    const run = await getRunInfo(this.connections.store.db, runId);
    if (!run) throw new AxRunNotFoundError(runId);
    return run;
  }

  /** Resolves with the run once it is `success`, `failed` or `cancelled`. */
  async waitForRun(runId: string, options: { timeout?: Duration } = {}): Promise<RunInfo> {
    const timeoutMs = parseDuration(options.timeout ?? "60s");
    const deadline = Date.now() + timeoutMs;
    let pause = 10;
    for (;;) {
      const status = await runStatus(this.connections.store.db, runId);
      if (!status) throw new AxRunNotFoundError(runId);
      if (TERMINAL_RUN_STATUSES.includes(status)) return this.getRun(runId);
      if (Date.now() >= deadline) throw new AxWaitTimeoutError(runId, status, timeoutMs);
      await sleep(Math.min(pause, Math.max(1, deadline - Date.now())));
      pause = Math.min(pause * 2, 250);
    }
  }

  /**
   * Cancels a run: its queued and delayed nodes are removed, its running attempts' `signal`s
   * abort, and it ends `cancelled`. A run already finished is left as it is (`cancelled: false`
   * and its status). Throws AxRunNotFoundError for an unknown id.
   */
  async cancel(runId: string): Promise<CancelResult> {
    const result = UUID.test(runId) ? await cancelRun({ db: this.connections.store.db, queues: this.connections.queues }, runId) : undefined;
    if (!result) throw new AxRunNotFoundError(runId);
    return result;
  }

  /** Newest first. */
  listRuns(filter: RunFilter = {}): Promise<RunSummary[]> {
    return listRunSummaries(this.connections.store.db, filter);
  }

  /** Stops a flow's schedule from ticking, cluster-wide and across restarts. Throws AxScheduleNotFoundError for a flow without one. */
  async pauseSchedule(flow: string): Promise<{ flow: string; paused: boolean }> {
    return setPaused(this.connections.store.db, flow, true);
  }

  /** Lets a paused schedule tick again from its next fire time (ticks missed while paused are not run). */
  async resumeSchedule(flow: string): Promise<{ flow: string; paused: boolean }> {
    return setPaused(this.connections.store.db, flow, false);
  }

  /** Every stored schedule with its next three fire times and its newest tick. */
  listSchedules(): Promise<ScheduleInfo[]> {
    return describeSchedules(this.connections.store.db);
  }

  async close(): Promise<void> {
    if (this.ownsConnections) await this.connections.close();
  }

  /** Concurrent triggers share one lookup; an unknown flow is not cached, so it is found once registered. */
  private async flowVersion(name: string): Promise<FlowVersion | undefined> {
    const cached = this.versions.get(name);
    if (cached && Date.now() - cached.at < FLOW_CACHE_MS) return cached.version;
    const version = latestFlowVersion(this.connections.store.db, name);
    this.versions.set(name, { at: Date.now(), version });
    const found = await version.catch((error: unknown) => {
      this.versions.delete(name);
      throw error;
    });
    if (!found) this.versions.delete(name);
    return found;
  }
}
