import type { Duration, RunInfo, RunSummary, TaskLogQuery, TaskLogs, TriggerOptions } from "ax-scheduler";
import type { CancelResult } from "@ax/coordinator";
import type { RunFilter } from "@ax/store";

/** What the CLI's client commands need: a `Client` on the store, or the HTTP API of an `ax dev`. */
export interface RunsApi {
  triggerFlow(flow: string, payload: unknown, options?: TriggerOptions): Promise<string>;
  waitForRun(runId: string, options?: { timeout?: Duration }): Promise<RunInfo>;
  getRun(runId: string): Promise<RunInfo>;
  cancel(runId: string): Promise<CancelResult>;
  listRuns(filter?: RunFilter): Promise<RunSummary[]>;
  getLogs(runId: string, query?: TaskLogQuery): Promise<TaskLogs>;
  close(): Promise<void>;
}
