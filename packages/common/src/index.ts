export * from "./errors/definition.js";
export * from "./errors/runs.js";
export * from "./errors/data.js";
export * from "./errors/attempts.js";
export * from "./errors/schedules.js";
export * from "./errors/reruns.js";
export * from "./errors/config.js";
