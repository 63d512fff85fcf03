export * from "./redis.js";
export * from "./queues.js";
export * from "./enqueue.js";
export * from "./trigger.js";
export * from "./reconciler.js";
export * from "./cancel.js";
export * from "./schedules/index.js";
