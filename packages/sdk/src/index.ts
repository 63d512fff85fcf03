export { ax } from "./ax.js";
export { Runtime, type Role, type RuntimeOptions, type StopOptions } from "./runtime.js";
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
export type { Flow, FlowInput } from "./definition/flow.js";
export { Tokens, type ApiTokenInfo, type AuditEntry, type CreatedApiToken, type TokenScope } from "./tokens.js";
export type { Stored, Task } from "./definition/task.js";
export { Ref, type RefArgs, type RefOr } from "./definition/ref.js";
export type { TaskOptions } from "./options.js";
export type { FlowOptions } from "./flow-options.js";
export { resolveTaskOptions } from "./options.js";
export { parseDuration, type Duration } from "./duration.js";
export { axLogger } from "./logger.js";
export { reportStandaloneApi } from "./process-report.js";
export { pruneHistory } from "./prune-history.js";
export { resolveAlertGroups, sendTestAlert, type AlertsConfig } from "./config/alerts-config.js";
export type { Alert, AlertGroup, AlertKind, AlertSink, DeliveryResult } from "@ax/coordinator";
export { loadRuntimeConfig, parseRuntimeConfig, readConfigFile, type KnownNames, type RuntimeConfig } from "./config/runtime-config.js";
export {
  configChannel,
  LiveConfig,
  type ConfigHistoryEntry,
  type ConfigVersionInfo,
  type ConfigApplied,
  type ConfigCheck,
  type EditOptions,
} from "./config/live-config.js";
export type { EffectiveConfig, EffectiveOption } from "./config/effective-config.js";
export type { CancelResult, RetiredFlow } from "@ax/coordinator";
export type { FlowState } from "@ax/store";
export type { ScheduleInfo, QueueInfo, BusyKey } from "@ax/coordinator";
export type { CallerTransactionHandle } from "@ax/store";
export type { RerunOptions, BackfillStarted } from "@ax/coordinator";
export type { BackfillInfo, LogLineInfo, TaskLogs, TaskLogQuery, PruneCounts, PruneResult, ProcessConfigState } from "@ax/store";
export type {
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
export type { TaskContext, AxEvent, AxEventName, ResolvedTaskOptions } from "@ax/worker";
// Every error ax throws or stores, one family per module of @ax/common.
export * from "@ax/common";
