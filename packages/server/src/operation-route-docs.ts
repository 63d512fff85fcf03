import { z } from "zod";
import {
  backfillBody,
  backfillsQuery,
  flowParams,
  backfillIdParams,
  apiError,
  pausedAnswer,
  retiredAnswer,
  flowState,
  flowStatesQuery,
} from "./api-schemas.js";
import { backfillInfo, scheduleInfo } from "./response-schemas.js";
import { badRequest, redisUnreachable, type RouteDoc } from "./route-doc.js";

/** Operating the cluster: queues, busy keys, schedules, backfills, workers. */
export const OPERATION_ROUTE_DOCS: Record<string, RouteDoc> = {
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
      503: redisUnreachable,
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
      503: redisUnreachable,
    },
  },
  "GET /api/schedules": {
    scope: "read",
    summary: "every stored schedule with its next fire times and last tick",
    responses: { 200: { description: "schedules", schema: z.object({ schedules: z.array(scheduleInfo) }) } },
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
  "GET /api/flow-states": {
    scope: "read",
    summary:
      "every flow in use by name (with retired=true: the retired ones too), with the live processes defining it, its newest run and its unfinished runs",
    query: flowStatesQuery,
    responses: { 200: { description: "flows", schema: z.object({ flows: z.array(flowState) }) }, 400: badRequest },
  },
  "POST /api/flows/:flow/retire": {
    scope: "admin",
    audit: "flow.retire",
    summary:
      "take a flow whose code is gone out of use: no longer listed, triggered, scheduled or named in config; its runs stay readable. A Runtime defining it brings it back",
    params: flowParams,
    responses: {
      200: { description: "retired", schema: retiredAnswer },
      404: { description: "no flow of that name was registered", schema: apiError },
      409: {
        description: "still in use: a live process defines it, a run of it is unfinished, or the config in force names it",
        schema: apiError,
      },
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
      200: { description: "backfills", schema: z.object({ backfills: z.array(backfillInfo) }) },
      400: badRequest,
    },
  },
  "GET /api/backfills/:id": {
    scope: "read",
    summary: "one backfill's progress",
    params: backfillIdParams,
    responses: {
      200: { description: "the backfill", schema: backfillInfo },
      404: { description: "unknown backfill", schema: apiError },
    },
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
  "POST /api/backfills/:id/cancel": {
    scope: "trigger",
    audit: "backfill.cancel",
    summary: "cancel a backfill: unstarted runs end cancelled, started ones are cancelled",
    params: backfillIdParams,
    responses: {
      200: { description: "cancelled", schema: z.object({ backfillId: z.uuid(), cancelledRuns: z.number().int() }) },
      404: { description: "unknown backfill", schema: apiError },
      503: redisUnreachable,
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
};
