export * from "./server.js";
export * from "./metrics-server.js";
export * from "./served-flow.js";
export * from "./openapi.js";
export { API_ROUTES, type RouteDoc } from "./api-routes.js";
export { listQuery, triggerBody, triggerKey } from "./api-schemas.js";
export type { ConfigService } from "./config-routes.js";
export type { AuthOptions } from "./auth.js";
export type { RouteScope } from "./api-routes.js";
