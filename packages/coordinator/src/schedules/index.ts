export * from "./fire-times.js";
export * from "./overlap.js";
export * from "./catch-up.js";
export * from "./tick-claim.js";
export * from "./lag-metric.js";
export * from "./loop.js";
export * from "./pause.js";
export * from "./describe.js";
