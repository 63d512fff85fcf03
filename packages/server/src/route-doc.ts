import type { z } from "zod";
import type { TokenScope } from "@ax/store";
import { apiError } from "./api-schemas.js";

export type RouteScope = "public" | "metrics" | TokenScope;

/** What a route takes and answers, as the OpenAPI document describes it. */
export interface RouteDoc {
  summary: string;
  /**
   * The token scope the route needs (docs/security.md). Required, so a new route cannot be added
   * without deciding who may call it. `metrics`: `read` unless the server runs with `metricsAuth: false`.
   */
  scope: RouteScope;
  /** The audit log action a successful call records (who, when, from where, on what). */
  audit?: string;
  /** The token may come as `?access_token=` (a browser's EventSource cannot send headers); only for reads that stream. */
  tokenInQuery?: true;
  params?: z.ZodObject;
  query?: z.ZodObject;
  body?: z.ZodType;
  /** Status code -> answer schema (undefined for a non-JSON answer). */
  responses: Record<number, { description: string; schema?: z.ZodType; contentType?: string }>;
}

export const notFound = { description: "unknown run", schema: apiError };
export const badRequest = { description: "the request does not match its schema", schema: apiError };
export const redisUnreachable = {
  description:
    "Redis did not answer within 5 s, or refuses the password (AxRedisUnreachableError), or PostgreSQL could not be reached (AxStoreError)",
  schema: apiError,
};
export const configUnavailable = { description: "this server was started without a config service", schema: apiError };

/** Every route of the HTTP API, keyed `METHOD url` as fastify registers it. */
