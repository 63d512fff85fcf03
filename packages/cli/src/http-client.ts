import { setTimeout as sleep } from "node:timers/promises";
import {
  AxRunNotFoundError,
  AxWaitTimeoutError,
  parseDuration,
  type Duration,
  type RunInfo,
  type RunSummary,
  type TaskLogQuery,
  type TaskLogs,
  type TriggerOptions,
} from "ax-scheduler";
import type { CancelResult } from "@ax/coordinator";
import { TERMINAL_RUN_STATUSES, type RunFilter } from "@ax/store";
import { AxApiError, AxApiUnreachableError } from "./errors.js";
import type { RunsApi } from "./runs-api.js";
import type { DataDirHolder } from "@ax/common";

const REQUEST_TIMEOUT_MS = 30_000;

/**
 * The client commands through the HTTP API of the `ax dev` that holds an embedded data
 * directory: PGlite serves one process, so the CLI must not open the directory itself.
 */
export class HttpRunsApi implements RunsApi {
  private readonly api: string;

  constructor(private readonly holder: DataDirHolder & { api: string }) {
    this.api = holder.api.replace(/\/+$/, "");
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
    };
    const { runId } = await this.request<{ runId: string }>("POST", `/api/flows/${encodeURIComponent(flow)}/runs`, body);
    return runId;
  }

  async getRun(runId: string): Promise<RunInfo> {
    return this.request<RunInfo>("GET", `/api/runs/${encodeURIComponent(runId)}`, undefined, runId);
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
    return this.request<CancelResult>("POST", `/api/runs/${encodeURIComponent(runId)}/cancel`, undefined, runId);
  }

  async listRuns(filter: RunFilter = {}): Promise<RunSummary[]> {
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(filter)) if (value !== undefined) query.set(name, String(value));
    const { runs } = await this.request<{ runs: RunSummary[] }>("GET", `/api/runs?${query}`);
    return runs;
  }

  async getLogs(runId: string, query: TaskLogQuery = {}): Promise<TaskLogs> {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(query)) if (value !== undefined) params.set(name, String(value));
    return this.request<TaskLogs>("GET", `/api/runs/${encodeURIComponent(runId)}/logs?${params}`, undefined, runId);
  }

  async close(): Promise<void> {}

  /** `runId` turns a 404 into the same AxRunNotFoundError a local Client throws. */
  private async request<T>(method: "GET" | "POST", path: string, body?: unknown, runId?: string): Promise<T> {
    let response: Response;
    try {
      response = await fetch(`${this.api}${path}`, {
        method,
        headers: body === undefined ? {} : { "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (error) {
      const cause = (error as { cause?: { code?: string } }).cause?.code;
      throw new AxApiUnreachableError(this.api, this.holder.pid, cause ?? (error as Error).message);
    }
    if (response.status === 404 && runId !== undefined) throw new AxRunNotFoundError(runId);
    const answer = (await response.json().catch(() => undefined)) as (T & { error?: string; message?: string }) | undefined;
    if (!response.ok || answer === undefined) {
      throw new AxApiError(this.api, response.status, answer?.error ?? "Error", answer?.message ?? response.statusText);
    }
    return answer;
  }
}
