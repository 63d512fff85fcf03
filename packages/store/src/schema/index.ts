export * from "./alerts.js";
export * from "./archive.js";
export * from "./auth.js";
export * from "./config.js";
export * from "./runs.js";
export * from "./scheduling.js";
