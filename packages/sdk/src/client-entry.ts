// `ax-scheduler/client`: what a producer service needs to trigger and follow runs. It leaves out
// the runtime, so importing it loads neither the worker, the HTTP server nor the executors.
export {
  Client,
  type ClientOptions,
  type TriggerOptions,
  type TriggerManyOptions,
  type BackfillOptions,
  type RunFilter,
} from "./client.js";
export type { RunTimingOptions } from "./trigger-options.js";
export type { Flow, FlowInput } from "./definition/flow.js";
export type { CancelResult, ScheduleInfo, QueueInfo, BusyKey, RerunOptions, BackfillStarted } from "@ax/coordinator";
export type {
  CallerTransactionHandle,
  BackfillInfo,
  RunInfo,
  TaskRunInfo,
  AttemptInfo,
  RunSummary,
  RunPage,
  RunStatus,
  TaskStatus,
  AttemptOutcome,
  Json,
  AlertMute,
  LoggedAlert,
} from "@ax/store";
export * from "@ax/common";
