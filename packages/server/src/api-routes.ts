import { z } from "zod";
import type { TokenScope } from "@ax/store";
import { logsAnswer, logsQuery } from "./log-schemas.js";
import {
  alertsQuery,
  loggedAlert,
  eventsQuery,
  flowOverviewQuery,
  listQuery,
  triggerBody,
  rerunBody,
  backfillBody,
  backfillsQuery,
  configBody,
  configVersionParams,
  triggerAnswer,
  runIdParams,
  flowParams,
  backfillIdParams,
  flowNameParams,
  auditQuery,
  tokenBody,
  tokenNameParams,
  tokenInfo,
  auditEntry,
  apiError,
  jsonValue,
  flowDescription,
  runSummary,
  runInfo,
  pausedAnswer,
  configVersion,
  effectiveOption,
} from "./api-schemas.js";

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

const notFound = { description: "unknown run", schema: apiError };
const badRequest = { description: "the request does not match its schema", schema: apiError };
const configUnavailable = { description: "this server was started without a config service", schema: apiError };

/** Every route of the HTTP API, keyed `METHOD url` as fastify registers it. */
export const API_ROUTES: Record<string, RouteDoc> = {
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
  "GET /api/flows": {
    scope: "read",
    summary: "registered flow names",
    responses: { 200: { description: "flow names", schema: z.object({ flows: z.array(z.string()) }) } },
  },
  "GET /api/flows/:name": {
    scope: "read",
    summary: "a flow's DAG, options and schedule",
    params: flowNameParams,
    responses: { 200: { description: "the flow", schema: flowDescription }, 404: { description: "unknown flow", schema: apiError } },
  },
  "GET /api/runs": {
    scope: "read",
    summary: "runs, newest first",
    query: listQuery,
    responses: {
      200: {
        description: "run summaries",
        schema: z.object({
          runs: z.array(runSummary),
          nextCursor: z.string().nullable().meta({ description: "cursor of the next (older) page; null on the last page" }),
        }),
      },
      400: badRequest,
    },
  },
  "GET /api/runs/:id": {
    scope: "read",
    summary: "one run with its nodes and attempts",
    params: runIdParams,
    responses: { 200: { description: "the run", schema: runInfo }, 404: notFound },
  },
  "GET /api/runs/:id/logs": {
    scope: "read",
    summary: "a run's task log lines (ax.context().log), per node and attempt",
    params: runIdParams,
    query: logsQuery,
    responses: {
      200: { description: "log lines in the order logged; a node with no lines yet answers an empty list", schema: logsAnswer },
      400: badRequest,
      404: { description: "unknown run, or `node` names no node of the run (the message lists its nodes)", schema: apiError },
    },
  },
  "POST /api/runs/:id/cancel": {
    scope: "trigger",
    audit: "run.cancel",
    summary: "cancel a run",
    params: runIdParams,
    responses: {
      200: {
        description: "cancel result",
        schema: z.object({ runId: z.string(), cancelled: z.boolean(), status: z.string(), removedJobs: z.number().int() }),
      },
      404: notFound,
    },
  },
  "POST /api/flows/:flow/runs": {
    scope: "trigger",
    audit: "run.trigger",
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
  "GET /api/events": {
    scope: "read",
    tokenInQuery: true,
    summary: "the cluster's events as server-sent events (`id:` event id, `data:` AxEvent JSON), replaying those after `after`",
    query: eventsQuery,
    responses: { 200: { description: "an endless event stream", contentType: "text/event-stream" }, 400: badRequest },
  },
  "GET /api/queues": {
    scope: "read",
    summary: "each task queue: waiting, active and delayed jobs, the limit holding it, live workers serving it",
    responses: {
      200: {
        description: "queues",
        schema: z.object({
          queues: z.array(
            z.object({
              name: z.string(),
              group: z.string(),
              task: z.string(),
              waiting: z.number(),
              active: z.number(),
              delayed: z.number(),
              limited: z.string().nullable(),
              workers: z.number(),
              slots: z
                .object({ running: z.number().int(), capacity: z.number().int().nullable() })
                .meta({ description: "attempts running in its live workers (of any queue) and their slots together" }),
            }),
          ),
        }),
      },
    },
  },
  "GET /api/queues/:task/keys": {
    scope: "read",
    summary: "the task's business keys with runs waiting on their concurrency limit, busiest first",
    params: z.object({ task: z.string() }),
    responses: {
      200: {
        description: "keys",
        schema: z.object({ keys: z.array(z.object({ key: z.string(), waiting: z.number(), running: z.number() })) }),
      },
    },
  },
  "GET /api/schedules": {
    scope: "read",
    summary: "every stored schedule with its next fire times and last tick",
    responses: { 200: { description: "schedules", schema: z.object({ schedules: z.array(z.record(z.string(), jsonValue)) }) } },
  },
  "POST /api/flows/:flow/schedule/pause": {
    scope: "admin",
    audit: "schedule.pause",
    summary: "pause a flow's schedule cluster-wide",
    params: flowParams,
    responses: { 200: { description: "paused", schema: pausedAnswer }, 404: { description: "the flow has no schedule", schema: apiError } },
  },
  "POST /api/flows/:flow/schedule/resume": {
    scope: "admin",
    audit: "schedule.resume",
    summary: "resume a flow's schedule",
    params: flowParams,
    responses: {
      200: { description: "resumed", schema: pausedAnswer },
      404: { description: "the flow has no schedule", schema: apiError },
    },
  },
  "POST /api/runs/:id/rerun": {
    scope: "trigger",
    audit: "run.rerun",
    summary: "rerun a finished run (failed nodes, from a node, or all)",
    params: runIdParams,
    body: rerunBody,
    responses: {
      201: { description: "the new run", schema: z.object({ runId: z.uuid(), rerunOf: z.uuid() }) },
      400: badRequest,
      404: notFound,
      409: { description: "the run is unfinished, or nothing failed", schema: apiError },
    },
  },
  "POST /api/flows/:flow/backfills": {
    scope: "trigger",
    audit: "backfill.create",
    summary: "one run per schedule tick in [from, to), released a few at a time",
    params: flowParams,
    body: backfillBody,
    responses: {
      201: {
        description: "the backfill",
        schema: z.object({
          backfillId: z.uuid(),
          ticks: z.number().int(),
          created: z.number().int(),
          maxConcurrentRuns: z.number().int(),
        }),
      },
      400: badRequest,
      404: { description: "unknown flow", schema: apiError },
    },
  },
  "GET /api/backfills": {
    scope: "read",
    summary: "backfills with their progress, newest first",
    query: backfillsQuery,
    responses: {
      200: { description: "backfills", schema: z.object({ backfills: z.array(z.record(z.string(), jsonValue)) }) },
      400: badRequest,
    },
  },
  "GET /api/backfills/:id": {
    scope: "read",
    summary: "one backfill's progress",
    params: backfillIdParams,
    responses: {
      200: { description: "the backfill", schema: z.record(z.string(), jsonValue) },
      404: { description: "unknown backfill", schema: apiError },
    },
  },
  "GET /api/config": {
    scope: "read",
    summary: "the config version in force (the newest stored), or null",
    responses: { 200: { description: "the version", schema: z.object({ config: configVersion.nullable() }) }, 501: configUnavailable },
  },
  "GET /api/config/versions": {
    scope: "read",
    summary: "stored config versions, newest first, with lines added and removed",
    responses: {
      200: { description: "versions", schema: z.object({ versions: z.array(z.record(z.string(), jsonValue)) }) },
      501: configUnavailable,
    },
  },
  "GET /api/config/versions/:version": {
    scope: "read",
    summary: "one stored config version with its diff to the one before",
    params: configVersionParams,
    responses: {
      200: { description: "the version", schema: configVersion },
      400: badRequest,
      404: { description: "unknown version", schema: apiError },
      501: configUnavailable,
    },
  },
  "POST /api/config": {
    scope: "admin",
    audit: "config.apply",
    summary: "validate runtime.yaml against the cluster's flows, store it as a new version; every process applies it within seconds",
    body: configBody,
    responses: {
      201: {
        description:
          "the stored version, with `warnings`: pools the code gives tasks that it leaves unsized (those tasks will not start), YAML error lists the code contradicts, and YAML queues no live worker serves",
        schema: configVersion.extend({ warnings: z.array(z.string()) }),
      },
      400: {
        description: "invalid YAML or request: the error names file, line, column and key; nothing is stored",
        schema: apiError.extend({
          file: z.string().optional(),
          line: z.number().int().optional(),
          column: z.number().int().optional(),
          key: z.string().optional(),
        }),
      },
      501: configUnavailable,
    },
  },
  "GET /api/config/effective": {
    scope: "read",
    summary: "every option's effective value and its source (yaml vN, code or default); durations in ms",
    responses: {
      200: {
        description: "effective config",
        schema: z.object({
          version: z.number().int().nullable(),
          cluster: z.array(effectiveOption),
          tasks: z.record(z.string(), z.array(effectiveOption)),
          flows: z.record(z.string(), z.array(effectiveOption)),
        }),
      },
      501: configUnavailable,
    },
  },
  "GET /api/runs/:id/stream": {
    scope: "read",
    summary: "server-sent events: the run (RunInfo) each time it changes, then `event: end` once it is finished",
    params: runIdParams,
    responses: { 200: { description: "`data: <RunInfo JSON>` lines", contentType: "text/event-stream" }, 404: notFound },
  },
  "GET /api/workers": {
    scope: "read",
    summary: "worker processes: their queues, attempts running now, config version, last heartbeat",
    responses: {
      200: {
        description: "workers, newest heartbeat first",
        schema: z.object({
          workers: z.array(
            z.object({
              id: z.string(),
              hostname: z.string(),
              pid: z.number().int(),
              queues: z.array(z.string()),
              configVersion: z.number().int().nullable(),
              concurrency: z
                .number()
                .int()
                .nullable()
                .meta({ description: "its slots (maxConcurrency); null for a worker older than 0.9" }),
              heartbeatAt: z.string(),
              live: z.boolean().meta({ description: "heartbeat in the last 10 s" }),
              running: z.number().int().meta({ description: "attempts it runs now" }),
            }),
          ),
        }),
      },
    },
  },
  "GET /api/flows/:name/versions": {
    scope: "read",
    summary: "a flow's stored DAG versions, newest first",
    params: flowNameParams,
    responses: {
      200: {
        description: "versions",
        schema: z.object({ versions: z.array(z.object({ version: z.number().int(), createdAt: z.string(), nodes: z.number().int() })) }),
      },
      404: { description: "unknown flow", schema: apiError },
    },
  },
  "GET /api/flow-overview": {
    scope: "read",
    summary: "every flow with its newest version's size and its recent runs, in one request (the console's Flows page)",
    query: flowOverviewQuery,
    responses: {
      200: {
        description: "flows by name",
        schema: z.object({
          flows: z.array(
            z.object({
              name: z.string(),
              version: z.number().int(),
              nodes: z.number().int(),
              recentRuns: z.array(runSummary),
            }),
          ),
        }),
      },
      400: badRequest,
    },
  },
  "GET /*": {
    scope: "public",
    summary: "the web console (its files; any other path outside /api answers its index.html)",
    responses: { 200: { description: "HTML, scripts, styles", contentType: "text/html" } },
  },
  "POST /api/backfills/:id/cancel": {
    scope: "trigger",
    audit: "backfill.cancel",
    summary: "cancel a backfill: unstarted runs end cancelled, started ones are cancelled",
    params: backfillIdParams,
    responses: {
      200: { description: "cancelled", schema: z.object({ backfillId: z.uuid(), cancelledRuns: z.number().int() }) },
      404: { description: "unknown backfill", schema: apiError },
    },
  },
  "POST /api/backfills/:id/retry": {
    scope: "trigger",
    audit: "backfill.retry",
    summary: "rerun a backfill's failed and cancelled ticks (what did not succeed and what follows), held under its cap",
    params: backfillIdParams,
    responses: {
      200: {
        description: "the reruns written, and how many of the backfill's runs go at once now",
        schema: z.object({ backfillId: z.uuid(), retried: z.number().int(), maxConcurrentRuns: z.number().int() }),
      },
      404: { description: "unknown backfill", schema: apiError },
      409: { description: "AxBackfillCancelledError: the backfill was cancelled", schema: apiError },
    },
  },
  "GET /api/audit": {
    summary: "the audit log, newest first: who triggered, cancelled, reran, applied config, paused schedules, managed tokens",
    scope: "admin",
    query: auditQuery,
    responses: { 200: { description: "entries", schema: z.object({ entries: z.array(auditEntry) }) }, 400: badRequest },
  },
  "GET /api/alerts": {
    summary: "alerts the coordinators sent, newest first, with what each sink answered",
    scope: "read",
    query: alertsQuery,
    responses: { 200: { description: "sent alerts", schema: z.object({ alerts: z.array(loggedAlert) }) }, 400: badRequest },
  },
  "GET /api/tokens": {
    summary: "API tokens: names, scopes, last use, expiry (never the tokens themselves)",
    scope: "admin",
    responses: { 200: { description: "tokens", schema: z.object({ tokens: z.array(tokenInfo) }) } },
  },
  "POST /api/tokens": {
    summary: "create a token; the answer is the only time the token is shown",
    scope: "admin",
    body: tokenBody,
    responses: {
      201: { description: "the new token", schema: tokenInfo.extend({ token: z.string() }) },
      400: badRequest,
      409: { description: "a token has this name", schema: apiError },
    },
  },
  "DELETE /api/tokens/:name": {
    summary: "revoke a token: it stops working at once on every server",
    scope: "admin",
    params: tokenNameParams,
    responses: {
      200: { description: "revoked", schema: z.object({ revoked: z.string() }) },
      404: { description: "no token has this name", schema: apiError },
    },
  },
};
