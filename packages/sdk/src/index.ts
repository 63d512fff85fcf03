// The main entry: everything `ax-scheduler/client` has (Client, its types, every error), then
// what defines and runs flows.
export * from "./client-entry.js";
export { ax } from "./ax.js";
export { Runtime, type Role, type RuntimeOptions, type StopOptions } from "./runtime.js";
export { Tokens } from "./tokens.js";
export type { Stored, Task } from "./definition/task.js";
export { Ref, type RefArgs, type RefOr } from "./definition/ref.js";
export type { TaskOptions } from "./options.js";
export type { FlowOptions } from "./flow-options.js";
export { resolveTaskOptions } from "./options.js";
export { parseDuration } from "./duration.js";
export { axLogger } from "./logger.js";
export { reportStandaloneApi } from "./process-report.js";
export { pruneHistory } from "./prune-history.js";
export { resolveAlertGroups, sendTestAlert, type AlertsConfig } from "./config/alerts-config.js";
export type { Alert, AlertGroup, AlertKind, AlertSink, DeliveryResult } from "@ax/coordinator";
export { loadRuntimeConfig, parseRuntimeConfig, readConfigFile, type KnownNames, type RuntimeConfig } from "./config/runtime-config.js";
export { configChannel, LiveConfig } from "./config/live-config.js";
export type { TaskContext, AxEvent, AxEventName, ResolvedTaskOptions } from "@ax/worker";
