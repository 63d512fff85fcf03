import { z } from "zod";
import { logsAnswer, logsQuery } from "./log-schemas.js";
import {
  eventsQuery,
  flowOverviewQuery,
  listQuery,
  triggerBody,
  rerunBody,
  triggerAnswer,
  runIdParams,
  flowParams,
  flowNameParams,
  apiError,
  flowDescription,
} from "./api-schemas.js";
import { runInfo, runSummary } from "./response-schemas.js";
import { notFound, badRequest, redisUnreachable, type RouteDoc } from "./route-doc.js";

/** Flows and runs: list, read, trigger, cancel, rerun, follow. */
export const RUN_ROUTE_DOCS: Record<string, RouteDoc> = {
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
      503: redisUnreachable,
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
  "GET /api/runs/:id/stream": {
    scope: "read",
    summary: "server-sent events: the run (RunInfo) each time it changes, then `event: end` once it is finished",
    params: runIdParams,
    responses: { 200: { description: "`data: <RunInfo JSON>` lines", contentType: "text/event-stream" }, 404: notFound },
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
              definedBy: z.number().int().meta({ description: "live processes whose code defines the flow (0: none)" }),
              recentRuns: z.array(runSummary),
            }),
          ),
        }),
      },
      400: badRequest,
    },
  },
};
