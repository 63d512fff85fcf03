export * from "./server.js";
export * from "./metrics-server.js";
