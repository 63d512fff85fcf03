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

/**
 * What the CLI's client commands need: a `Client` on the store, or the HTTP API of the `ax dev`
 * that holds an embedded data directory (so every method here needs a route of that API).
 */
export interface RunsApi {
  triggerFlow(flow: string, payload: unknown, options?: TriggerOptions): Promise<string>;
  waitForRun(runId: string, options?: { timeout?: Duration }): Promise<RunInfo>;
  getRun(runId: string): Promise<RunInfo>;
  cancel(runId: string): Promise<CancelResult>;
  listRuns(filter?: RunFilter): Promise<RunSummary[]>;
  getLogs(runId: string, query?: TaskLogQuery): Promise<TaskLogs>;
  rerun(runId: string, options?: RerunOptions): Promise<string>;
  backfill(flow: string, options: BackfillOptions): Promise<BackfillStarted>;
  getBackfill(backfillId: string): Promise<BackfillInfo>;
  listBackfills(options?: { limit?: number }): Promise<BackfillInfo[]>;
  cancelBackfill(backfillId: string): Promise<{ backfillId: string; cancelledRuns: number }>;
  retryBackfill(backfillId: string): Promise<{ backfillId: string; retried: number; maxConcurrentRuns: number }>;
  listSchedules(): Promise<ScheduleInfo[]>;
  pauseSchedule(flow: string): Promise<{ flow: string; paused: boolean }>;
  resumeSchedule(flow: string): Promise<{ flow: string; paused: boolean }>;
  retireFlow(flow: string): Promise<RetiredFlow>;
  listFlows(options?: { retired?: boolean }): Promise<FlowState[]>;
  listQueues(): Promise<QueueInfo[]>;
  listBusyKeys(task: string): Promise<BusyKey[]>;
}
