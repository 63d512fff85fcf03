import { randomUUID } from "node:crypto";
import Fastify, { LogController } from "fastify";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import { z } from "zod";
import {
  AxNotJsonError,
  getRunInfo,
  listFlowNames,
  listRunSummaries,
  RUN_STATUSES,
  toStorableText,
  type Db,
} from "@ax/store";
import {
  AxPayloadTooLargeError,
  AxUnknownFlowError,
  cancelRun,
  DEFAULT_MAX_PAYLOAD_BYTES,
  RunWriter,
  triggerRun,
  type QueueRegistry,
} from "@ax/coordinator";
import { registerClusterMetrics } from "./cluster-metrics.js";
import { registerRerunBackfillRoutes } from "./rerun-backfill-routes.js";

export interface ServerOptions {
  db: Db;
  queues: QueueRegistry;
  registry: Registry;
  log: Logger;
  /** @defaultValue 8080; 0 picks a free port */
  port?: number | undefined;
  /** @defaultValue "127.0.0.1" */
  host?: string | undefined;
}

export interface RunningServer {
  url: string;
  close(): Promise<void>;
}

/** Text PostgreSQL can compare against: a NUL or lone surrogate in a filter is the caller's mistake, not a 500. */
const storableText = z.string().refine((text) => toStorableText(text) === text, "contains a NUL or a lone UTF-16 surrogate");

const listQuery = z.object({
  flow: storableText.optional(),
  status: z.enum(RUN_STATUSES).optional(),
  businessKey: storableText.optional(),
  limit: z.coerce.number().int().min(1).max(500).optional(),
});

const triggerBody = z
  .object({
    payload: z.unknown().optional(),
    idempotencyKey: z.string().min(1).optional(),
    businessKey: z.string().min(1).optional(),
  })
  .strict();

/** The HTTP API: runs, triggers and Prometheus metrics. */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  registerClusterMetrics(options);
  const writer = new RunWriter(options.db, options.queues);
  const app = Fastify({
    loggerInstance: options.log.child({ component: "api" }),
    logController: new LogController({ disableRequestLogging: true }),
    // Unique across processes and restarts, so the id in a 500 answer finds its log line.
    genReqId: () => randomUUID(),
    // Room above the payload cap (escapes, the envelope) so an oversized payload gets the trigger's own 413, which says what to do.
    bodyLimit: 4 * DEFAULT_MAX_PAYLOAD_BYTES,
  });

  app.setErrorHandler((error: Error & { statusCode?: number }, request, reply) => {
    if (error instanceof z.ZodError) {
      return reply.status(400).send({ error: "BadRequest", message: error.issues.map((i) => `${i.path.join(".") || "body"}: ${i.message}`).join("; ") });
    }
    if (error instanceof AxUnknownFlowError) return reply.status(404).send({ error: error.name, message: error.message });
    if (error instanceof AxPayloadTooLargeError) return reply.status(413).send({ error: error.name, message: error.message });
    // AxPayloadError is an AxNotJsonError: both name the JSON path the caller must fix.
    if (error instanceof AxNotJsonError) return reply.status(400).send({ error: error.name, message: error.message });
    if (error.statusCode && error.statusCode < 500) return reply.status(error.statusCode).send({ error: error.name, message: error.message });
    // Our own failure: its text may quote queries and other runs' data, so it goes to the log only.
    request.log.error({ err: error, requestId: request.id }, "API request failed");
    return reply.status(500).send({
      error: "InternalError",
      message: `the server could not complete the request; its log has the details under request id ${request.id}`,
      requestId: request.id,
    });
  });

  app.get("/healthz", async () => ({ ok: true }));

  app.get("/metrics", async (_request, reply) => {
    reply.header("content-type", options.registry.contentType);
    return options.registry.metrics();
  });

  app.get("/api/flows", async () => ({ flows: await listFlowNames(options.db) }));

  app.get("/api/runs", async (request) => ({ runs: await listRunSummaries(options.db, listQuery.parse(request.query)) }));

  app.get<{ Params: { id: string } }>("/api/runs/:id", async (request, reply) => {
    const id = z.uuid().safeParse(request.params.id);
    const run = id.success ? await getRunInfo(options.db, id.data) : undefined;
    if (!run) return reply.status(404).send({ error: "AxRunNotFoundError", message: `no run with id ${request.params.id}` });
    return run;
  });

  app.post<{ Params: { id: string } }>("/api/runs/:id/cancel", async (request, reply) => {
    const id = z.uuid().safeParse(request.params.id);
    const result = id.success ? await cancelRun({ db: options.db, queues: options.queues }, id.data) : undefined;
    if (!result) return reply.status(404).send({ error: "AxRunNotFoundError", message: `no run with id ${request.params.id}` });
    return result;
  });

  app.post<{ Params: { flow: string } }>("/api/flows/:flow/runs", async (request, reply) => {
    const body = triggerBody.parse(request.body ?? {});
    const triggered = await triggerRun(
      { writer },
      { flow: request.params.flow, payload: body.payload ?? null, trigger: "event", idempotencyKey: body.idempotencyKey, businessKey: body.businessKey },
    );
    return reply.status(triggered.created ? 201 : 200).send(triggered);
  });

  registerRerunBackfillRoutes(app, { db: options.db, queues: options.queues });

  const url = await app.listen({ port: options.port ?? 8080, host: options.host ?? "127.0.0.1" });
  return { url, close: () => app.close() };
}
