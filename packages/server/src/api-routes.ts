import { z } from "zod";
import { jsonValue } from "./api-schemas.js";
import type { RouteDoc } from "./route-doc.js";
import { ADMIN_ROUTE_DOCS } from "./admin-route-docs.js";
import { OPERATION_ROUTE_DOCS } from "./operation-route-docs.js";
import { RUN_ROUTE_DOCS } from "./run-route-docs.js";

export type { RouteDoc, RouteScope } from "./route-doc.js";

/** The service itself: health, metrics, this document, the console's files. */
const SERVICE_ROUTE_DOCS: Record<string, RouteDoc> = {
  "GET /healthz": {
    scope: "public",
    summary: "liveness",
    responses: { 200: { description: "alive", schema: z.object({ ok: z.literal(true) }) } },
  },
  "GET /readyz": {
    scope: "public",
    summary: "readiness: PostgreSQL (select 1) and Redis (PING) answer within 2 s",
    responses: {
      200: { description: "ready", schema: z.object({ ok: z.literal(true) }) },
      503: {
        description: "not ready: each dependency's problem, or ok",
        schema: z.object({ ok: z.literal(false), postgres: z.string(), redis: z.string() }),
      },
    },
  },
  "GET /metrics": {
    scope: "metrics",
    summary: "Prometheus metrics",
    responses: { 200: { description: "Prometheus text format", contentType: "text/plain" } },
  },
  "GET /api/openapi.json": {
    scope: "read",
    summary: "this document",
    responses: { 200: { description: "OpenAPI 3.1 document", schema: z.record(z.string(), jsonValue) } },
  },
  "GET /*": {
    scope: "public",
    summary: "the web console (its files; any other path outside /api answers its index.html)",
    responses: { 200: { description: "HTML, scripts, styles", contentType: "text/html" } },
  },
};

/** Every route of the HTTP API, keyed `METHOD url` as fastify registers it. */
export const API_ROUTES: Record<string, RouteDoc> = {
  ...SERVICE_ROUTE_DOCS,
  ...RUN_ROUTE_DOCS,
  ...OPERATION_ROUTE_DOCS,
  ...ADMIN_ROUTE_DOCS,
};
