import { z } from "zod";
import { RUN_STATUSES, toStorableText } from "@ax/store";

/** Text PostgreSQL can compare against: a NUL or lone surrogate in a filter is the caller's mistake, not a 500. */
export const storableText = z.string().refine((text) => toStorableText(text) === text, "contains a NUL or a lone UTF-16 surrogate");

export const listQuery = z.object({
  flow: storableText.optional(),
  status: z.enum(RUN_STATUSES).optional(),
  businessKey: storableText.optional(),
  limit: z.coerce.number().int().min(1).max(500).optional(),
});

export const triggerBody = z
  .object({
    payload: z.unknown().optional().meta({ description: "the run's input (JSON)" }),
    idempotencyKey: z.string().min(1).optional().meta({ description: "wins over the flow's own idempotencyKey function" }),
    businessKey: z.string().min(1).optional().meta({ description: "wins over the flow's own businessKey function" }),
    runAt: z.iso.datetime({ offset: true }).optional().meta({ description: "start the run's first nodes at this time (ISO 8601)" }),
    priority: z.number().int().min(1).max(2 ** 21).optional().meta({ description: "BullMQ priority of every job of the run, 1 served first" }),
  })
  .strict();

export const triggerAnswer = z.object({ runId: z.uuid(), created: z.boolean() });

export const runIdParams = z.object({ id: z.string().meta({ description: "run id (uuid)" }) });
export const flowParams = z.object({ flow: z.string().meta({ description: "flow name" }) });
export const flowNameParams = z.object({ name: z.string().meta({ description: "flow name" }) });

export const apiError = z.object({ error: z.string(), message: z.string() });

const jsonValue = z.unknown().meta({ description: "any JSON value" });

export const flowDescription = z.object({
  name: z.string(),
  version: z.number().int().meta({ description: "the latest stored DAG version" }),
  nodes: z.array(z.object({ key: z.string(), task: z.string(), queue: z.string(), upstream: z.array(z.string()) })),
  edges: z.array(z.object({ from: z.string(), to: z.string() })),
  options: z.record(z.string(), jsonValue).nullable().meta({ description: "the flow's options, when this server loaded its code" }),
  schedule: z
    .union([z.string(), z.object({ cron: z.string(), timezone: z.string().optional() })])
    .nullable()
    .meta({ description: "the flow's schedule, when this server loaded its code and it has one" }),
});

/** What a route takes and answers, as the OpenAPI document describes it. */
export interface RouteDoc {
  summary: string;
  params?: z.ZodObject;
  query?: z.ZodObject;
  body?: z.ZodType;
  /** Status code -> answer schema (undefined for a non-JSON answer). */
  responses: Record<number, { description: string; schema?: z.ZodType; contentType?: string }>;
}

const runSummary = z.record(z.string(), jsonValue).meta({ description: "RunSummary (see docs/api.md)" });
const runInfo = z.record(z.string(), jsonValue).meta({ description: "RunInfo (see docs/api.md)" });
const notFound = { description: "unknown run", schema: apiError };
const badRequest = { description: "the request does not match its schema", schema: apiError };

/** Every route of the HTTP API, keyed `METHOD url` as fastify registers it. */
export const API_ROUTES: Record<string, RouteDoc> = {
  "GET /healthz": { summary: "liveness", responses: { 200: { description: "alive", schema: z.object({ ok: z.literal(true) }) } } },
  "GET /metrics": { summary: "Prometheus metrics", responses: { 200: { description: "Prometheus text format", contentType: "text/plain" } } },
  "GET /api/openapi.json": { summary: "this document", responses: { 200: { description: "OpenAPI 3.1 document", schema: z.record(z.string(), jsonValue) } } },
  "GET /api/flows": {
    summary: "registered flow names",
    responses: { 200: { description: "flow names", schema: z.object({ flows: z.array(z.string()) }) } },
  },
  "GET /api/flows/:name": {
    summary: "a flow's DAG, options and schedule",
    params: flowNameParams,
    responses: { 200: { description: "the flow", schema: flowDescription }, 404: { description: "unknown flow", schema: apiError } },
  },
  "GET /api/runs": {
    summary: "runs, newest first",
    query: listQuery,
    responses: { 200: { description: "run summaries", schema: z.object({ runs: z.array(runSummary) }) }, 400: badRequest },
  },
  "GET /api/runs/:id": { summary: "one run with its nodes and attempts", params: runIdParams, responses: { 200: { description: "the run", schema: runInfo }, 404: notFound } },
  "POST /api/runs/:id/cancel": {
    summary: "cancel a run",
    params: runIdParams,
    responses: {
      200: { description: "cancel result", schema: z.object({ runId: z.string(), cancelled: z.boolean(), status: z.string(), removedJobs: z.number().int() }) },
      404: notFound,
    },
  },
  "POST /api/flows/:flow/runs": {
    summary: "trigger a run (the flow's idempotencyKey/businessKey functions apply when the server loaded its code)",
    params: flowParams,
    body: triggerBody,
    responses: {
      201: { description: "a new run", schema: triggerAnswer },
      200: { description: "the idempotency key was used already: that run", schema: triggerAnswer },
      400: badRequest,
      404: { description: "unknown flow", schema: apiError },
      413: { description: "payload over the size cap", schema: apiError },
    },
  },
};
