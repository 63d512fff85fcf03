// `ax-scheduler/client`: what a producer service needs to trigger and follow runs. It leaves out
// the runtime, so importing it loads neither the worker, the HTTP server nor the executors. Every
// type a Client method takes or answers is here, so a producer never needs the main entry for one.
export {
  Client,
  type ClientOptions,
  type TriggerOptions,
  type TriggerManyOptions,
  type BackfillOptions,
  type PruneRequest,
  type RunFilter,
} from "./client.js";
export type { RunTimingOptions } from "./trigger-options.js";
export type { Duration } from "./duration.js";
export type { Flow, FlowInput } from "./definition/flow.js";
export type { Tokens, ApiTokenInfo, AuditEntry, CreatedApiToken, TokenScope } from "./tokens.js";
export type {
  LiveConfig,
  ConfigHistoryEntry,
  ConfigVersionInfo,
  ConfigApplied,
  ConfigCheck,
  EditOptions,
} from "./config/live-config.js";
export type { EffectiveConfig, EffectiveOption } from "./config/effective-config.js";
export type {
  CancelResult,
  RetiredFlow,
  ScheduleInfo,
  QueueInfo,
  BusyKey,
  RerunOptions,
  BackfillStarted,
} from "@ax/coordinator";
export type {
  AuditFilter,
  CallerTransactionHandle,
  BackfillInfo,
  FlowState,
  LogLineInfo,
  TaskLogs,
  TaskLogQuery,
  PruneCounts,
  PruneResult,
  ProcessConfigState,
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
