import { setTimeout as sleep } from "node:timers/promises";
import type {
  BackfillInfo,
  BackfillOptions,
  BackfillStarted,
  BusyKey,
  FlowState,
  Duration,
  QueueInfo,
  RerunOptions,
  RunFilter,
  RunInfo,
  RunSummary,
  ScheduleInfo,
  TaskLogQuery,
  TaskLogs,
  TriggerOptions,
} from "ax-scheduler";
import type { CancelResult, RetiredFlow } from "@ax/coordinator";
import { AxWaitTimeoutError, parseDuration, REUSED_KEY_CODE, reusedKeyMessage, TERMINAL_RUN_STATUSES } from "@ax/common";
import type { Logger } from "pino";
import { apiRequest, queryString, type ApiRequest, type Json } from "./api-request.js";
import type { RunsApi } from "./runs-api.js";
import type { DataDirHolder } from "@ax/common";

/**
 * The client commands through the HTTP API of the `ax dev` that holds an embedded data
 * directory: PGlite serves one process, so the CLI must not open the directory itself.
 */
export class HttpRunsApi implements RunsApi {
  private readonly request: ApiRequest;

  constructor(
    holder: DataDirHolder & { api: string },
    /** Where the warning for a reused idempotency key goes, as a Client's logger gets it. */
    private readonly log?: Logger,
  ) {
    this.request = apiRequest(holder);
  }

  async triggerFlow(flow: string, payload: unknown, options: TriggerOptions = {}): Promise<string> {
    // The API takes an absolute runAt: a relative delay is fixed here, at the caller's clock.
    const runAt = options.runAt ?? (options.delay === undefined ? undefined : new Date(Date.now() + parseDuration(options.delay)));
    const body = {
      payload,
      idempotencyKey: options.idempotencyKey,
      businessKey: options.businessKey,
      priority: options.priority,
      runAt: runAt === undefined ? undefined : new Date(runAt).toISOString(),
      // What the direct path (Client) records: the same command labels its run alike whichever way it goes.
      trigger: "manual",
    };
    const { runId, samePayload } = await this.request<{ runId: string; samePayload?: boolean }>(
      "POST",
      `/api/flows/${encodeURIComponent(flow)}/runs`,
      body,
    );
    if (samePayload === false) {
      // The key may come from the flow's code on the server: the run says which it was.
      const key = options.idempotencyKey ?? (await this.getRun(runId)).idempotencyKey ?? "";
      this.log?.warn({ code: REUSED_KEY_CODE, runId, count: 1 }, reusedKeyMessage({ flow, key, runId }));
    }
    return runId;
  }

  async getRun(runId: string): Promise<RunInfo> {
    return this.request<RunInfo>("GET", `/api/runs/${encodeURIComponent(runId)}`);
  }

  async waitForRun(runId: string, options: { timeout?: Duration } = {}): Promise<RunInfo> {
    const timeoutMs = parseDuration(options.timeout ?? "60s");
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const run = await this.getRun(runId);
      if (TERMINAL_RUN_STATUSES.includes(run.status)) return run;
      if (Date.now() >= deadline) throw new AxWaitTimeoutError(runId, run.status, timeoutMs);
      await sleep(Math.min(200, Math.max(1, deadline - Date.now())));
    }
  }

  async cancel(runId: string): Promise<CancelResult> {
    return this.request<CancelResult>("POST", `/api/runs/${encodeURIComponent(runId)}/cancel`);
  }

  async listRuns(filter: RunFilter = {}): Promise<RunSummary[]> {
    const { runs } = await this.request<{ runs: RunSummary[] }>("GET", `/api/runs${queryString(filter)}`);
    return runs;
  }

  async getLogs(runId: string, query: TaskLogQuery = {}): Promise<TaskLogs> {
    return this.request<TaskLogs>("GET", `/api/runs/${encodeURIComponent(runId)}/logs${queryString(query)}`);
  }

  async rerun(runId: string, options: RerunOptions = {}): Promise<string> {
    const body = { only: options.only, from: options.from, payload: options.payload };
    const answer = await this.request<{ runId: string }>("POST", `/api/runs/${encodeURIComponent(runId)}/rerun`, body);
    return answer.runId;
  }

  async backfill(flow: string, options: BackfillOptions): Promise<BackfillStarted> {
    // The API takes instants with an offset only.
    const body = {
      from: new Date(options.from).toISOString(),
      to: new Date(options.to).toISOString(),
      maxConcurrentRuns: options.maxConcurrentRuns,
      maxTicks: options.maxTicks,
    };
    return this.request<BackfillStarted>("POST", `/api/flows/${encodeURIComponent(flow)}/backfills`, body);
  }

  async getBackfill(backfillId: string): Promise<BackfillInfo> {
    return this.request<BackfillInfo>("GET", `/api/backfills/${encodeURIComponent(backfillId)}`);
  }

  async listBackfills(options: { limit?: number } = {}): Promise<BackfillInfo[]> {
    const { backfills } = await this.request<{ backfills: BackfillInfo[] }>("GET", `/api/backfills${queryString(options)}`);
    return backfills;
  }

  async cancelBackfill(backfillId: string): Promise<{ backfillId: string; cancelledRuns: number }> {
    return this.request("POST", `/api/backfills/${encodeURIComponent(backfillId)}/cancel`);
  }

  async retryBackfill(backfillId: string): Promise<{ backfillId: string; retried: number; maxConcurrentRuns: number }> {
    return this.request("POST", `/api/backfills/${encodeURIComponent(backfillId)}/retry`);
  }

  async listSchedules(): Promise<ScheduleInfo[]> {
    const { schedules } = await this.request<{ schedules: Json<ScheduleInfo>[] }>("GET", "/api/schedules");
    // JSON carries the times as ISO strings; the direct path and the renderer have Dates.
    return schedules.map((s) => ({
      ...s,
      resumedAt: s.resumedAt === null ? null : new Date(s.resumedAt),
      updatedAt: new Date(s.updatedAt),
      nextFireTimes: s.nextFireTimes.map((t) => new Date(t)),
      overdueSince: s.overdueSince === null ? null : new Date(s.overdueSince),
      lastTick: s.lastTick && { ...s.lastTick, logicalDate: new Date(s.lastTick.logicalDate), createdAt: new Date(s.lastTick.createdAt) },
    }));
  }

  async pauseSchedule(flow: string): Promise<{ flow: string; paused: boolean }> {
    return this.request("POST", `/api/flows/${encodeURIComponent(flow)}/schedule/pause`);
  }

  async resumeSchedule(flow: string): Promise<{ flow: string; paused: boolean }> {
    return this.request("POST", `/api/flows/${encodeURIComponent(flow)}/schedule/resume`);
  }

  async retireFlow(flow: string): Promise<RetiredFlow> {
    const answer = await this.request<Json<RetiredFlow>>("POST", `/api/flows/${encodeURIComponent(flow)}/retire`);
    return { ...answer, retiredAt: new Date(answer.retiredAt) };
  }

  async listFlows(options: { retired?: boolean } = {}): Promise<FlowState[]> {
    const { flows } = await this.request<{ flows: Json<FlowState>[] }>("GET", `/api/flow-states${options.retired ? "?retired=true" : ""}`);
    return flows.map((f) => ({
      ...f,
      lastRunAt: f.lastRunAt === null ? null : new Date(f.lastRunAt),
      retiredAt: f.retiredAt === null ? null : new Date(f.retiredAt),
    }));
  }

  async listQueues(): Promise<QueueInfo[]> {
    const { queues } = await this.request<{ queues: QueueInfo[] }>("GET", "/api/queues");
    return queues;
  }

  async listBusyKeys(task: string): Promise<BusyKey[]> {
    const { keys } = await this.request<{ keys: BusyKey[] }>("GET", `/api/queues/${encodeURIComponent(task)}/keys`);
    return keys;
  }
}
