import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import {
  cancelBackfill,
  cancelRun,
  describeSchedules,
  FlowCaps,
  rerunRun,
  retryBackfill,
  RETIRE_LIVE_MS,
  retireFlow,
  setPaused,
  type RetiredFlow,
  startBackfill,
  triggerRun,
  triggerRuns,
  type BackfillStarted,
  type CancelResult,
  type RerunOptions,
  type ScheduleInfo,
  type TriggerDeps,
  type TriggerRequest,
  explainWaitingNodes,
  queueOverview,
  busyKeys,
  type BusyKey,
  type QueueInfo,
  muteAlerts,
  unmuteAlerts,
  UnkeyedWarning,
} from "@ax/coordinator";
import { AxBackfillNotFoundError, AxTriggerOptionError, isUuid } from "@ax/common";
import {
  backfillInfo,
  callerTransactionDb,
  listAudit,
  type AuditEntry,
  type AuditFilter,
  listBackfills,
  type BackfillInfo,
  getRunInfo,
  listRunPage,
  listRunSummaries,
  runStatus,
  TERMINAL_RUN_STATUSES,
  type RunInfo,
  type RunPage,
  type RunSummary,
  readTaskLogs,
  type PruneCounts,
  type PruneResult,
  type TaskLogQuery,
  type TaskLogs,
  type Json,
  unknownFlowError,
  toStorableText,
  writeAudit,
  listAlertMutes,
  listFlowStates,
  type FlowState,
  listAlerts,
  type AlertMute,
  type LoggedAlert,
} from "@ax/store";
import type { Flow, FlowInput } from "./definition/flow.js";
import { localActor, Tokens } from "./tokens.js";
import type { Duration } from "./duration.js";
import { openConnections, type Connections } from "./connections.js";
import { AxConfigError, AxNoEmbeddedHistoryError, AxRunNotFoundError, AxWaitTimeoutError, DEFAULT_DATA_DIR } from "@ax/common";
import { pruneHistory } from "./prune-history.js";
import { checkKeys, computedKey, resolveTiming, type RunTimingOptions } from "./trigger-options.js";
import { LiveConfig } from "./config/live-config.js";
import { checkOptions } from "./option-checks.js";
import { checkArgs, flowOf, perPayload } from "./client-arguments.js";
import { FlowVersions } from "./flow-versions.js";
import { warnReusedKeys } from "./reused-key-warning.js";
import {
  backfillSchema,
  clientOptionsSchema,
  flowNameSchema,
  limitSchema,
  logQuerySchema,
  muteIdSchema,
  muteSchema,
  mutesQuerySchema,
  listFlowsSchema,
  alertHistorySchema,
  auditSchema,
  payloadsSchema,
  pruneSchema,
  rerunSchema,
  runFilterSchema,
  triggerManySchema,
  triggerSchema,
  waitSchema,
} from "./client-options.js";

import type { BackfillOptions, ClientOptions, PruneRequest, RunFilter, TriggerManyOptions, TriggerOptions } from "./client-types.js";

export type { BackfillOptions, ClientOptions, PruneRequest, RunFilter, TriggerManyOptions, TriggerOptions };

const DEFAULT_WAIT_MS = 60_000;

/** What producer services and tools use: trigger runs and read their history. */
export class Client {
  private readonly connections: Connections;
  private readonly ownsConnections: boolean;
  private readonly flows: Map<string, Flow<any>>;
  private readonly caps: FlowCaps;
  private readonly versions: FlowVersions;
  private readonly unkeyed: UnkeyedWarning;
  private liveConfig: LiveConfig | undefined;

  constructor(
    private readonly options: ClientOptions = {},
    shared?: Connections,
  ) {
    checkOptions(clientOptionsSchema, options, (problems) => new AxConfigError(`Client options: ${problems}`));
    if (!shared && !options.storage) {
      // Embedded history is kept by a Runtime: opened here, a missing directory would be created empty.
      const dataDir = resolve(options.dataDir ?? DEFAULT_DATA_DIR);
      if (!existsSync(dataDir)) throw new AxNoEmbeddedHistoryError(dataDir);
    }
    // Reads of history need PostgreSQL only: Redis is reached at the first call that needs it, so
    // such a call neither waits for it nor warns while it is down (`ax runs` with Redis away).
    this.connections = shared ?? openConnections(options, options.logger, { lazyRedis: true });
    this.ownsConnections = !shared;
    this.flows = new Map((options.flows ?? []).map((f) => [f.name, f]));
    this.caps = new FlowCaps(this.connections.store.db);
    this.versions = new FlowVersions(this.connections.store.db);
    this.unkeyed = new UnkeyedWarning(this.caps, options.logger);
  }

  /** Stored configuration: apply a YAML version (every Runtime follows it live), history, diff, rollback, effective values. */
  get config(): LiveConfig {
    this.liveConfig ??= new LiveConfig(this.connections.store.db, this.connections.redis, this.connections.queues.prefix);
    return this.liveConfig;
  }

  /**
   * Starts a run; with an idempotency key already used for this flow, returns that run's id.
   * With `tx` the run is written in the caller's transaction and enqueued after its commit.
   */
  triggerFlow<F extends Flow<any>>(flow: F, payload: FlowInput<F>, options?: TriggerOptions): Promise<string>;
  triggerFlow(flow: string, payload: unknown, options?: TriggerOptions): Promise<string>;
  async triggerFlow(flowOrName: string | Flow<any>, payload: unknown, options: TriggerOptions = {}): Promise<string> {
    checkOptions(triggerSchema, options, (problems) => new AxTriggerOptionError(`trigger options: ${problems}`));
    const [flow, defined] = flowOf(flowOrName, "triggerFlow", this.flows);
    const { runAt, priority } = resolveTiming(options);
    const request: TriggerRequest = {
      flow,
      payload,
      trigger: options.trigger ?? "manual",
      idempotencyKey: options.idempotencyKey ?? computedKey(defined?.idempotencyKey, payload, "idempotencyKey"),
      businessKey: options.businessKey ?? computedKey(defined?.businessKey, payload, "businessKey"),
      runAt,
      priority,
    };
    checkKeys(request);
    const runId = options.tx ? (await this.triggerMany([request], options))[0]! : await this.triggerOne(request);
    if (!defined) await this.unkeyed.check(flow, { idempotencyKey: options.idempotencyKey, businessKey: options.businessKey });
    return runId;
  }

  /**
   * Starts many runs of one flow at once (a burst of events): one statement writes them all and
   * their first jobs go to Redis together. Returns the run ids in payload order; a payload whose
   * idempotency key was already used (before, or earlier in the list) gets that run's id.
   */
  triggerFlows<F extends Flow<any>>(flow: F, payloads: FlowInput<F>[], options?: TriggerManyOptions): Promise<string[]>;
  triggerFlows(flow: string, payloads: unknown[], options?: TriggerManyOptions): Promise<string[]>;
  async triggerFlows(flowOrName: string | Flow<any>, payloads: unknown[], options: TriggerManyOptions = {}): Promise<string[]> {
    checkArgs(payloadsSchema, payloads, "triggerFlows(flow, payloads)");
    checkOptions(triggerManySchema, options, (problems) => new AxTriggerOptionError(`trigger options: ${problems}`));
    const [flow, defined] = flowOf(flowOrName, "triggerFlows", this.flows);
    if (payloads.length === 0) {
      // Nothing to write, but a misspelt flow name must not pass unseen.
      await this.assertRegistered(flow);
      return [];
    }
    const { runAt, priority } = resolveTiming(options);
    const requests = payloads.map(
      (payload, i): TriggerRequest => ({
        flow,
        payload,
        trigger: options.trigger ?? "manual",
        idempotencyKey: computedKey(perPayload(options.idempotencyKey, i) ?? defined?.idempotencyKey, payload, "idempotencyKey", i),
        businessKey: computedKey(perPayload(options.businessKey, i) ?? defined?.businessKey, payload, "businessKey", i),
        runAt,
        priority,
      }),
    );
    for (const [i, request] of requests.entries()) checkKeys(request, i);
    const runIds = await this.triggerMany(requests, options);
    if (!defined) await this.unkeyed.check(flow, { idempotencyKey: options.idempotencyKey, businessKey: options.businessKey });
    return runIds;
  }

  async getRun(runId: string): Promise<RunInfo> {
    // Anything but a uuid names no run, and must not reach PostgreSQL, which would refuse its cast.
    const run = isUuid(runId) ? await getRunInfo(this.connections.store.db, runId) : undefined;
    if (!run) throw new AxRunNotFoundError(runId);
    return explainWaitingNodes(this.connections.store.db, this.connections.queues, run);
  }

  /** Resolves with the run once it is `success`, `failed` or `cancelled`. */
  async waitForRun(runId: string, options: { timeout?: Duration } = {}): Promise<RunInfo> {
    const timeoutMs = checkArgs(waitSchema, options, "waitForRun").timeout ?? DEFAULT_WAIT_MS;
    if (!isUuid(runId)) throw new AxRunNotFoundError(runId);
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
   * The `ax.context().log` lines of a run's attempts, in the order logged (500 lines / 64 KiB per
   * attempt; `truncated` names the attempts that logged more). `after` returns only lines with a
   * greater `seq` within their attempt. Throws AxRunNotFoundError for an unknown id, and
   * AxNodeNotFoundError (from readTaskLogs) for a `node` the run does not have.
   */
  async getLogs(runId: string, query: TaskLogQuery = {}): Promise<TaskLogs> {
    checkArgs(logQuerySchema, query, "getLogs");
    const logs = isUuid(runId) ? await readTaskLogs(this.connections.store.db, runId, query) : undefined;
    if (!logs) throw new AxRunNotFoundError(runId);
    return logs;
  }

  /**
   * Deletes (with `archive`, first copies into the `*_archive` tables) finished runs older than
   * `olderThan` with their nodes, attempts, task logs and idempotency keys, and once keys and
   * schedule ticks older than it, in short transactions (`ax prune`). `dryRun` only counts.
   * Throws AxPruneBusyError while another prune (a coordinator's hourly pass) runs. Audited as
   * `history.prune` by `cli:<os user>`, as the API audits its callers' prunes.
   */
  async prune(options: PruneRequest): Promise<PruneResult | (PruneCounts & { dryRun: true })> {
    checkArgs(pruneSchema, options, "prune");
    const result = await pruneHistory(this.connections.store, options);
    await writeAudit(this.connections.store.db, {
      actor: localActor(),
      action: "history.prune",
      detail: "dryRun" in result ? { runs: result.runs, dryRun: true } : { runs: result.runs, archived: result.archived },
    });
    return result;
  }

  /**
   * Cancels a run: its queued and delayed nodes are removed, its running attempts' `signal`s
   * abort, and it ends `cancelled`. A run already finished is left as it is (`cancelled: false`
   * and its status). Throws AxRunNotFoundError for an unknown id.
   */
  async cancel(runId: string): Promise<CancelResult> {
    const result = isUuid(runId) ? await cancelRun({ db: this.connections.store.db, queues: this.connections.queues }, runId) : undefined;
    if (!result) throw new AxRunNotFoundError(runId);
    return result;
  }

  /**
   * Starts a new run repeating `runId` (`trigger: "rerun"`, `rerunOf`) on the flow version it
   * used: `only: "failed"` (default) re-executes failed, skipped and cancelled nodes and their
   * descendants, `from` that node and its descendants, `all` everything; other nodes keep their
   * stored results (`reusedFrom`). Refused, with nothing written, for an unknown run
   * (AxRunNotFoundError), an unfinished one (AxRunNotFinishedError), an unknown `from`
   * (AxUnknownNodeError), nothing to rerun (AxNothingToRerunError), or, when this client knows
   * its flows (`runtime.client()`, `flows` option), a task no longer defined (AxTaskUnavailableError).
   */
  async rerun(runId: string, options: RerunOptions = {}): Promise<string> {
    checkArgs(rerunSchema, options, "rerun");
    const deps = {
      db: this.connections.store.db,
      queues: this.connections.queues,
      maxPayloadBytes: this.options.maxPayloadBytes,
      knownTasks: this.knownTasks(),
      businessKeyOf: (flow: string, payload: Json) =>
        computedKey(this.flows.get(flow)?.options.businessKey, payload, "businessKey", undefined, "rerun with a payload it handles"),
    };
    const runIdFound = isUuid(runId) ? await rerunRun(deps, runId, options) : undefined;
    if (!runIdFound) throw new AxRunNotFoundError(runId);
    return runIdFound;
  }

  /** The tasks this client's flows define, for reruns to refuse a task no longer defined; undefined when it knows no flows. */
  private knownTasks(): Set<string> | undefined {
    return this.flows.size === 0 ? undefined : new Set([...this.flows.values()].flatMap((f) => [...f.tasks.keys()]));
  }

  /**
   * One run per tick of the flow's schedule in [from, to) (`trigger: "backfill"`, `logicalDate`),
   * at most `maxConcurrentRuns` at a time. A tick that already has a backfill run is not run again.
   */
  async backfill(flow: string, options: BackfillOptions): Promise<BackfillStarted> {
    checkArgs(backfillSchema, options, "backfill");
    return startBackfill(
      { db: this.connections.store.db, queues: this.connections.queues },
      {
        flow,
        from: new Date(options.from),
        to: new Date(options.to),
        maxConcurrentRuns: options.maxConcurrentRuns,
        maxTicks: options.maxTicks,
        schedule: this.flows.get(flow)?.options.schedule,
      },
    );
  }

  async getBackfill(backfillId: string): Promise<BackfillInfo> {
    const found = isUuid(backfillId) ? await backfillInfo(this.connections.store.db, backfillId) : undefined;
    if (!found) throw new AxBackfillNotFoundError(backfillId);
    return found;
  }

  /**
   * Reruns the failed ticks of a backfill (their failed nodes and what follows them), held under its
   * cap, each new run taking the failed one's place in its progress. AxBackfillCancelledError for
   * a cancelled backfill; `retried` 0 when no tick failed.
   */
  async retryBackfill(backfillId: string): Promise<{ backfillId: string; retried: number; maxConcurrentRuns: number }> {
    if (!isUuid(backfillId)) throw new AxBackfillNotFoundError(backfillId);
    return retryBackfill(
      {
        db: this.connections.store.db,
        queues: this.connections.queues,
        maxPayloadBytes: this.options.maxPayloadBytes,
        knownTasks: this.knownTasks(),
      },
      backfillId,
    );
  }

  /** Newest first, with progress. */
  async listBackfills(options: { limit?: number } = {}): Promise<BackfillInfo[]> {
    checkArgs(limitSchema, options, "listBackfills");
    return listBackfills(this.connections.store.db, options.limit);
  }

  /** Its runs not started yet end `cancelled`; started ones are cancelled like any run. */
  async cancelBackfill(backfillId: string): Promise<{ backfillId: string; cancelledRuns: number }> {
    if (!isUuid(backfillId)) throw new AxBackfillNotFoundError(backfillId);
    return cancelBackfill({ db: this.connections.store.db, queues: this.connections.queues }, backfillId);
  }

  /** Newest first. */
  async listRuns(filter: RunFilter = {}): Promise<RunSummary[]> {
    const { from, to } = checkArgs(runFilterSchema, filter, "listRuns");
    return listRunSummaries(this.connections.store.db, { ...filter, from, to });
  }

  /**
   * `listRuns` with the cursor of the next (older) page, to page through a history:
   * `listRunPage({ ...filter, cursor: page.nextCursor })` until `nextCursor` is null.
   */
  async listRunPage(filter: RunFilter = {}): Promise<RunPage> {
    const { from, to } = checkArgs(runFilterSchema, filter, "listRunPage");
    return listRunPage(this.connections.store.db, { ...filter, from, to });
  }

  /**
   * Stops a flow's schedule from ticking, cluster-wide and across restarts; recorded in the audit
   * log as `cli:<os user>`. Throws AxScheduleNotFoundError for a flow without one.
   */
  async pauseSchedule(flow: string): Promise<{ flow: string; paused: boolean }> {
    checkArgs(flowNameSchema, flow, "pauseSchedule");
    return this.setScheduleAudited(flow, true);
  }

  /** Lets a paused schedule tick again from its next fire time (ticks missed while paused are not run); audited as pauses are. */
  async resumeSchedule(flow: string): Promise<{ flow: string; paused: boolean }> {
    checkArgs(flowNameSchema, flow, "resumeSchedule");
    return this.setScheduleAudited(flow, false);
  }

  /** A schedule held or let go is an operator's decision: who made it is kept, as for the API's. */
  private async setScheduleAudited(flow: string, paused: boolean): Promise<{ flow: string; paused: boolean }> {
    const answer = await setPaused(this.connections.store.db, flow, paused);
    await writeAudit(this.connections.store.db, {
      actor: localActor(),
      action: paused ? "schedule.pause" : "schedule.resume",
      target: flow,
      detail: { paused: answer.paused },
    });
    return answer;
  }

  /**
   * Every flow in use by name (with `retired: true`, the retired ones too): its current version,
   * the live processes whose code defines it (0: none does, so it may be retired once its runs are
   * done), its newest run and its unfinished runs.
   */
  listFlows(options: { retired?: boolean } = {}): Promise<FlowState[]> {
    checkArgs(listFlowsSchema, options, "listFlows");
    return listFlowStates(this.connections.store.db, { liveMs: RETIRE_LIVE_MS, retired: options.retired });
  }

  /**
   * Takes a flow whose code is gone out of use: it is no longer listed, triggered (by name, a
   * rerun or a backfill), scheduled or named in runtime.yaml, while its runs stay readable. Throws
   * AxFlowInUseError while a live process's code defines it, a run of it is unfinished, or the
   * config in force names it or a task only it runs; AxUnknownFlowError for a name never
   * registered. A Runtime whose code defines it brings it back. Audited as `flow.retire`.
   */
  async retireFlow(flow: string): Promise<RetiredFlow> {
    checkArgs(flowNameSchema, flow, "retireFlow");
    const retired = await retireFlow(this.connections.store.db, flow);
    this.versions.forget(flow);
    await writeAudit(this.connections.store.db, {
      actor: localActor(),
      action: "flow.retire",
      target: flow,
      detail: { changed: retired.changed },
    });
    return retired;
  }

  /**
   * Mutes a group's alerts (narrowed to a flow, and a task, when given) cluster-wide until `for` has
   * passed or `unmuteAlerts(id)`; a muted alert is not sent, held back or counted in a silence
   * window. Throws AxAlertGroupNotFoundError for a group the config in force does not define.
   * Audited as `alerts.mute`.
   */
  async muteAlerts(options: { group: string; flow?: string; task?: string; for: Duration; reason?: string }): Promise<AlertMute> {
    const request = checkArgs(muteSchema, options, "muteAlerts");
    const db = this.connections.store.db;
    const actor = localActor();
    const mute = await muteAlerts(db, { ...request, forMs: request.for, createdBy: actor.name });
    await writeAudit(db, { actor, action: "alerts.mute", target: String(mute.id), detail: { group: mute.group } });
    return mute;
  }

  /** Ends a mute now; throws AxAlertMuteNotFoundError when none with that id is in force. Audited as `alerts.unmute`. */
  async unmuteAlerts(id: number): Promise<AlertMute> {
    checkArgs(muteIdSchema, id, "unmuteAlerts");
    const db = this.connections.store.db;
    const mute = await unmuteAlerts(db, id);
    await writeAudit(db, { actor: localActor(), action: "alerts.unmute", target: String(id), detail: { group: mute.group } });
    return mute;
  }

  /** The mutes in force, ending soonest first; `{ ended: true }` adds, after them, those that ended in the last 30 days, latest first. */
  listAlertMutes(options: { ended?: boolean } = {}): Promise<AlertMute[]> {
    checkArgs(mutesQuerySchema, options, "listAlertMutes");
    return listAlertMutes(this.connections.store.db, options);
  }

  /**
   * Sent alerts with what each sink answered, newest first (`limit` up to 500, default 50);
   * `before` (the last id of a page) pages to older ones. As `GET /api/alerts`.
   */
  listAlerts(options: { limit?: number; before?: number } = {}): Promise<LoggedAlert[]> {
    checkArgs(alertHistorySchema, options, "listAlerts");
    return listAlerts(this.connections.store.db, options);
  }

  /** Every stored schedule with its next three fire times and its newest tick. */
  listSchedules(): Promise<ScheduleInfo[]> {
    return describeSchedules(this.connections.store.db);
  }

  /** Each task queue: jobs waiting, active and delayed, the limit holding it, live workers serving it. */
  listQueues(): Promise<QueueInfo[]> {
    return queueOverview(this.connections.store.db, this.connections.queues);
  }

  /** The business keys of `task`'s per-key concurrency limit with runs waiting, busiest first. */
  listBusyKeys(task: string, limit = 20): Promise<BusyKey[]> {
    return busyKeys(this.connections.queues, task, limit);
  }

  /** API tokens: create (shown once), list, revoke; recorded in the audit log as `cli:<os user>`. */
  get tokens(): Tokens {
    return new Tokens(this.connections.store.db);
  }

  /**
   * The audit log, newest first: who triggered, cancelled, reran, applied config, paused schedules,
   * managed tokens. `before`: entries older than this id (the last id of the previous page);
   * `action`: one action (`run.cancel`) or a family without the dot (`run`); `actor`: one actor.
   */
  async audit(options: AuditFilter = {}): Promise<AuditEntry[]> {
    checkArgs(auditSchema, options, "audit");
    return listAudit(this.connections.store.db, options);
  }

  async close(): Promise<void> {
    if (this.ownsConnections) await this.connections.close();
  }

  private async assertRegistered(flow: string): Promise<void> {
    // A name PostgreSQL cannot store names no registered flow (the trigger path answers the same).
    const known = toStorableText(flow) === flow && (await this.versions.get(flow)) !== undefined;
    if (!known) throw await unknownFlowError(this.connections.store.db, flow);
  }

  private async triggerMany(requests: TriggerRequest[], options: RunTimingOptions): Promise<string[]> {
    if (options.tx && this.connections.store.kind === "pglite") {
      throw new AxConfigError(
        "triggerFlow({ tx }) needs server PostgreSQL (storage: postgres://…): embedded PGlite belongs to this process, so no producer transaction can include the run; trigger without tx",
      );
    }
    const into = options.tx ? { tx: callerTransactionDb(options.tx), schema: this.connections.store.schema } : undefined;
    const triggered = await triggerRuns(this.triggerDeps(), requests, into);
    warnReusedKeys(requests, triggered, this.options.logger);
    return triggered.map((t) => t.runId);
  }

  private async triggerOne(request: TriggerRequest): Promise<string> {
    const triggered = await triggerRun(this.triggerDeps(), request);
    warnReusedKeys([request], [triggered], this.options.logger);
    return triggered.runId;
  }

  private triggerDeps(): TriggerDeps {
    return {
      writer: this.connections.writer,
      maxPayloadBytes: this.options.maxPayloadBytes,
      resolveFlow: (name) => this.versions.get(name),
      capOf: (name) => this.caps.get(name),
    };
  }
}
