export { ax } from "./ax.js";
export { Runtime, type Role, type RuntimeOptions, type StopOptions } from "./runtime.js";
export { Client, type ClientOptions, type TriggerOptions, type BackfillOptions } from "./client.js";
export type { Flow } from "./definition/flow.js";
export type { Task } from "./definition/task.js";
export { Ref, type RefArgs, type RefOr } from "./definition/ref.js";
export type { TaskOptions, FlowOptions } from "./options.js";
export { resolveTaskOptions } from "./options.js";
export { parseDuration, type Duration } from "./duration.js";
export { loadRuntimeConfig, parseRuntimeConfig, type RuntimeConfig } from "./config/runtime-config.js";
export { AxDefinitionError, AxConfigError, AxRunNotFoundError, AxWaitTimeoutError } from "./errors.js";
export { AxUnknownFlowError, AxPayloadError, AxPayloadTooLargeError, AxCancelledError, type CancelResult } from "@ax/coordinator";
export {
  AxRunNotFinishedError,
  AxUnknownNodeError,
  AxNothingToRerunError,
  AxTaskUnavailableError,
  AxBackfillRangeError,
  AxNoScheduleError,
  AxTooManyTicksError,
  AxBackfillNotFoundError,
  type RerunOptions,
  type BackfillStarted,
} from "@ax/coordinator";
export type { BackfillInfo } from "@ax/store";
export { AxNotJsonError, AxStoreError } from "@ax/store";
export type { RunInfo, TaskRunInfo, AttemptInfo, RunSummary, RunStatus, TaskStatus, AttemptOutcome, Json } from "@ax/store";
export {
  NonRetryableError,
  RetryAfterError,
  AxResultTooLargeError,
  AxTimeoutError,
  AxHeartbeatLostError,
  AxUnknownTaskError,
  AxWorkerCrashedError,
  AxResourceLimitError,
  AxExecutorError,
  AxOnceClaimLostError,
  type TaskContext,
  type AxEvent,
  type AxEventName,
  type ResolvedTaskOptions,
} from "@ax/worker";
