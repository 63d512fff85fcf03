import { randomUUID } from "node:crypto";
import Fastify, { LogController, type FastifyError, type FastifyReply } from "fastify";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import { z } from "zod";
import {
  countApiTokens,
  getRunInfo,
  getSchedules,
  currentFlowVersion,
  flowRetiredAt,
  liveDefinerCounts,
  listFlowNames,
  unknownFlowError,
  listRunPage,
  toStorableText,
  type Db,
} from "@ax/store";
import {
  busyKeys,
  cancelRun,
  DEFAULT_MAX_PAYLOAD_BYTES,
  explainWaitingNodes,
  FlowCaps,
  queueOverview,
  RETIRE_LIVE_MS,
  RunWriter,
  SERVER_LACKING,
  triggerRun,
  UnkeyedWarning,
  type QueueRegistry,
} from "@ax/coordinator";
import {
  AxBadCursorError,
  AxNoTokensError,
  AxNotJsonError,
  AxPayloadTooLargeError,
  AxRunNotFoundError,
  AxUnknownFlowError,
  isStoreOutage,
  isUuid,
  plainMessage,
  portError,
  API_LISTENER,
  DEFAULT_API_HOST,
  DEFAULT_API_PORT,
} from "@ax/common";
import { listQuery, parseQuery, triggerBody } from "./api-schemas.js";
import { registerClusterMetrics } from "./cluster-metrics.js";
import { addProcessMetrics } from "./process-metrics.js";
import { bodyOf, registerJsonBodies } from "./json-body.js";
import { openApiDocument } from "./openapi.js";
import { flowRoutes } from "./flow-routes.js";
import { scheduleRoutes } from "./schedule-routes.js";
import { flowKey, triggerKeys, type ServedFlow } from "./served-flow.js";
import { registerRerunBackfillRoutes } from "./rerun-backfill-routes.js";
import { registerLogRoutes } from "./log-routes.js";
import { registerAlertRoutes } from "./alert-routes.js";
import { registerConsoleRoutes } from "./console-routes.js";
import { configErrorStatus, registerConfigRoutes, type ConfigService } from "./config-routes.js";
import { registerEventRoutes } from "./event-routes.js";
import { registerAuth, routeOf, type AuthOptions } from "./auth.js";
import { registerTokenRoutes } from "./token-routes.js";
import { registerHistoryRoutes, type HistoryService } from "./history-routes.js";
import { checkReadiness } from "./readiness.js";
import { answerNoRoute, MAX_PARAM_LENGTH } from "./no-route.js";

export interface ServerOptions {
  db: Db;
  queues: QueueRegistry;
  registry: Registry;
  log: Logger;
  /** @defaultValue 8080; 0 picks a free port */
  port?: number | undefined;
  /** @defaultValue "127.0.0.1" */
  host?: string | undefined;
  /** Flows whose code this process loaded: their key functions apply to triggers, their options (as loaded at start) show in `GET /api/flows/:name`. */
  flows?: ServedFlow[] | undefined;
  /** Stored config versions (`/api/config…`); without it those routes answer 501. */
  config?: ConfigService | undefined;
  /** `POST /api/history/prune`; without it that route answers 501. */
  history?: HistoryService | undefined;
  /** The built web console served at `/`; default: the @ax/console package's dist. */
  consoleDir?: string | undefined;
  /** Tokens, scopes, `/metrics` protection (docs/security.md). Without `insecureNoAuth`, at least one token must be stored. */
  auth?: AuthOptions | undefined;
  /** A run `running` longer than this counts in `ax_runs_stuck`. @defaultValue 3600000 (1 h) */
  stuckAfterMs?: number | undefined;
}

export interface RunningServer {
  url: string;
  /** `METHOD url` of every route (HEAD left out), as `/api/openapi.json` must list them. */
  routes: string[];
  close(): Promise<void>;
}

/** The API's version in its OpenAPI document. */
const API_VERSION = "0.1.0";

/** The routes whose body carries a run's payload: a trigger and a rerun. */
function carriesPayload(url: string | undefined): boolean {
  return url === "/api/flows/:flow/runs" || url === "/api/runs/:id/rerun";
}

/** The HTTP API: runs, triggers and Prometheus metrics, behind bearer tokens unless `auth.insecureNoAuth`. */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  if (!options.auth?.insecureNoAuth && (await countApiTokens(options.db)) === 0) throw new AxNoTokensError();
  registerClusterMetrics(options);
  addProcessMetrics(options.registry);
  const writer = new RunWriter(options.db, options.queues, options.log);
  const flows = new Map((options.flows ?? []).map((f) => [f.name, f]));
  const unkeyed = new UnkeyedWarning(new FlowCaps(options.db), options.log, SERVER_LACKING);
  const openApi = openApiDocument(API_VERSION);
  const app = Fastify({
    loggerInstance: options.log.child({ component: "api" }),
    logController: new LogController({ disableRequestLogging: true }),
    // Unique across processes and restarts, so the id in a 500 answer finds its log line.
    genReqId: () => randomUUID(),
    // Room above the payload cap (escapes, the envelope) so an oversized payload gets the trigger's own 413, which says what to do.
    bodyLimit: 4 * DEFAULT_MAX_PAYLOAD_BYTES,
    // Flow and task names have no length limit of their own: Fastify's default of 100 would make a long one unreachable.
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH, ignoreTrailingSlash: true },
    // A URL Fastify cannot decode never reaches a route or the error handler: answer it in the API's own shape.
    frameworkErrors: (error: FastifyError, _request: unknown, reply: FastifyReply) => {
      reply.status(400).send({ error: "BadRequest", message: `${error.message}; percent-encode the URL's special characters` });
    },
  });

  registerJsonBodies(app);

  // Ids are stored lower-case: an upper-case one names the same run or backfill, and answers and audit rows show it as stored.
  // Fastify's query parser drops what it cannot decode, so `?flow=%ZZ` would list every flow's runs.
  app.addHook("onRequest", async (request, reply) => {
    const query = request.url.indexOf("?");
    if (query === -1 || decodable(request.url.slice(query + 1))) return;
    return reply.status(400).send({
      error: "BadRequest",
      message: `the query string of ${request.url} cannot be decoded; percent-encode its special characters`,
    });
  });

  app.addHook("onRequest", async (request) => {
    const params = request.params as { id?: unknown };
    if (isUuid(params.id)) params.id = params.id.toLowerCase();
  });

  // Routes with query parameters check them against their schema; the others take none, so a
  // misspelt filter (`?flow=x` on a route that lists no flows) is not silently ignored.
  app.addHook("preValidation", async (request, reply) => {
    const { doc } = routeOf(request);
    // The console's pages keep their own state in the address (`/runs?flow=`): only API routes are checked.
    if (!doc || doc.query || !request.routeOptions.url?.startsWith("/api/")) return;
    const unknown = Object.keys(request.query as object).filter((key) => !(key === "access_token" && doc.tokenInQuery));
    if (unknown.length === 0) return;
    return reply.status(400).send({
      error: "BadRequest",
      message: `query: unknown parameter ${unknown.map((k) => `"${k}"`).join(", ")}; this route takes no query parameters`,
    });
  });

  // Likewise a route that takes no body refuses one with content (`{}`, what clients send for "nothing", passes):
  // a cancel sent with options it does not have would otherwise seem to have applied them.
  app.addHook("preValidation", async (request, reply) => {
    const { doc } = routeOf(request);
    if (!doc || doc.body || !request.routeOptions.url?.startsWith("/api/")) return;
    if (request.body === undefined || JSON.stringify(request.body) === "{}") return;
    return reply.status(400).send({
      error: "BadRequest",
      message: `body: ${request.method} ${request.routeOptions.url} takes no body; send none, or {}`,
    });
  });

  app.setNotFoundHandler(answerNoRoute);

  const routes: string[] = [];
  app.addHook("onRoute", (route) => {
    for (const method of [route.method].flat()) if (method !== "HEAD") routes.push(`${method} ${route.url}`);
  });

  app.setErrorHandler((error: Error & { statusCode?: number }, request, reply) => {
    if (error instanceof z.ZodError) {
      return reply.status(400).send({
        error: "BadRequest",
        message: error.issues.map((i) => `${i.path.join(".") || "body"}: ${plainMessage(i.message)}`).join("; "),
      });
    }
    if (error instanceof AxUnknownFlowError || error instanceof AxRunNotFoundError)
      return reply.status(404).send({ error: error.name, message: error.message });
    if (error instanceof AxBadCursorError) return reply.status(400).send({ error: error.name, message: error.message });
    if (error instanceof AxPayloadTooLargeError) return reply.status(413).send({ error: error.name, message: error.message });
    if (isStoreOutage(error)) return reply.status(503).send({ error: error.name, message: error.message });
    const configStatus = configErrorStatus(error);
    if (configStatus) return reply.status(configStatus).send({ error: error.name, message: error.message });
    // AxPayloadError is an AxNotJsonError: both name the JSON path the caller must fix.
    if (error instanceof AxNotJsonError) return reply.status(400).send({ error: error.name, message: error.message });
    const code = (error as { code?: string }).code;
    if (code === "FST_ERR_CTP_BODY_TOO_LARGE") {
      const limit = `the request body is over the API's ${4 * DEFAULT_MAX_PAYLOAD_BYTES} bytes`;
      return reply.status(413).send({
        error: "AxPayloadTooLargeError",
        message: carriesPayload(request.routeOptions.url)
          ? `${limit} (a run's payload is capped at ${DEFAULT_MAX_PAYLOAD_BYTES}): store the data elsewhere and pass its key`
          : `${limit}: send less (a runtime.yaml that large is not what ax expects; check what the body holds)`,
      });
    }
    if (code === "FST_ERR_CTP_INVALID_MEDIA_TYPE") {
      return reply.status(415).send({
        error: "UnsupportedMediaType",
        message: "the API reads JSON bodies only: send the body with content-type: application/json",
      });
    }
    if (error.statusCode && error.statusCode < 500)
      return reply.status(error.statusCode).send({ error: error.name, message: error.message });
    // Our own failure: its text may quote queries and other runs' data, so it goes to the log only.
    request.log.error({ err: error, requestId: request.id }, "API request failed");
    return reply.status(500).send({
      error: "InternalError",
      message: `the server could not complete the request; its log has the details under request id ${request.id}`,
      requestId: request.id,
    });
  });

  registerAuth(app, { db: options.db, queues: options.queues, log: options.log.child({ component: "auth" }) }, options.auth);

  // Liveness: the process answers. Readiness: PostgreSQL and Redis answer too (503 naming the failure otherwise).
  // Both are public, like the console's static files: a probe carries no token (docs/security.md).
  app.get("/healthz", async () => ({ ok: true }));
  app.get("/readyz", async (_request, reply) => {
    const ready = await checkReadiness({ db: options.db, redis: options.queues.connection });
    return reply.status(ready.ok ? 200 : 503).send(ready);
  });

  app.get("/metrics", async (_request, reply) => {
    reply.header("content-type", options.registry.contentType);
    return options.registry.metrics();
  });

  app.get("/api/flows", async () => ({ flows: await listFlowNames(options.db) }));

  app.get("/api/queues", async () => ({ queues: await queueOverview(options.db, options.queues) }));

  app.get<{ Params: { task: string } }>("/api/queues/:task/keys", async (request) => ({
    keys: await busyKeys(options.queues, request.params.task),
  }));

  app.get("/api/openapi.json", async () => openApi);

  app.get<{ Params: { name: string } }>("/api/flows/:name", async (request) => {
    const { name } = request.params;
    const version = toStorableText(name) === name ? await currentFlowVersion(options.db, name, { retired: true }) : undefined;
    if (!version) throw await unknownFlowError(options.db, name);
    const [retiredAt, definers] = await Promise.all([flowRetiredAt(options.db, name), liveDefinerCounts(options.db, RETIRE_LIVE_MS, name)]);
    const served = flows.get(name);
    // The stored schedule is the one coordinators tick by: it follows config versions, unlike the options this server started with.
    const [schedule] = await getSchedules(options.db, [name]);
    return {
      name,
      version: version.version,
      nodes: version.dag.nodes.map((n) => ({ key: n.key, task: n.task, queue: n.queue, upstream: n.upstream })),
      edges: version.dag.nodes.flatMap((n) => n.upstream.map((from) => ({ from, to: n.key }))),
      options: served?.options ?? null,
      schedule: schedule ? { cron: schedule.cron, timezone: schedule.timezone } : null,
      retiredAt: retiredAt?.toISOString() ?? null,
      definedBy: definers.get(name) ?? 0,
    };
  });

  app.get("/api/runs", async (request) => {
    const { from, to, ...query } = parseQuery(listQuery, request.query);
    return listRunPage(options.db, {
      ...query,
      from: from === undefined ? undefined : new Date(from),
      to: to === undefined ? undefined : new Date(to),
    });
  });

  app.get<{ Params: { id: string } }>("/api/runs/:id", async (request) => {
    const id = z.uuid().safeParse(request.params.id);
    const run = id.success ? await getRunInfo(options.db, id.data) : undefined;
    if (!run) throw new AxRunNotFoundError(request.params.id);
    return explainWaitingNodes(options.db, options.queues, run);
  });

  app.post<{ Params: { id: string } }>("/api/runs/:id/cancel", async (request) => {
    const id = z.uuid().safeParse(request.params.id);
    const result = id.success ? await cancelRun({ db: options.db, queues: options.queues }, id.data) : undefined;
    if (!result) throw new AxRunNotFoundError(request.params.id);
    return result;
  });

  app.post<{ Params: { flow: string } }>("/api/flows/:flow/runs", async (request, reply) => {
    const body = triggerBody.parse(bodyOf(request));
    const payload = body.payload ?? null;
    const served = flows.get(request.params.flow);
    const keys = triggerKeys(served, payload, body);
    const triggered = await triggerRun(
      { writer },
      {
        flow: request.params.flow,
        payload,
        trigger: body.trigger,
        ...keys,
        priority: body.priority,
        runAt: body.runAt === undefined ? undefined : new Date(body.runAt),
      },
    );
    if (!served) await unkeyed.check(request.params.flow, keys);
    return reply.status(triggered.created ? 201 : 200).send(triggered);
  });

  await app.register(scheduleRoutes(options.db));
  await app.register(flowRoutes(options.db));
  registerRerunBackfillRoutes(app, {
    db: options.db,
    queues: options.queues,
    // A rerun keeps its run's idempotency key: only the business key is computed from a new payload.
    businessKeyOf: (flow, payload) => flowKey(flows.get(flow), "businessKey", payload, undefined, "rerun with a payload it handles"),
  });
  registerConfigRoutes(app, options.config);
  registerTokenRoutes(app, options.db);
  registerHistoryRoutes(app, options.history);
  registerEventRoutes(app, { db: options.db, queues: options.queues, log: options.log.child({ component: "events-api" }) });
  registerLogRoutes(app, { db: options.db });
  registerAlertRoutes(app, options.db);
  await registerConsoleRoutes(app, { db: options.db, queues: options.queues, consoleDir: options.consoleDir });

  const port = options.port ?? DEFAULT_API_PORT;
  const host = options.host ?? DEFAULT_API_HOST;
  try {
    const url = await app.listen({ port, host });
    if (options.auth?.insecureNoAuth) {
      options.log.warn(
        { url },
        "the HTTP API runs without authentication (`ax dev` always does; `ax server --insecure-no-auth`, the Runtime's `insecureNoAuth`): every route, admin ones included, is open to anyone who reaches this address; use tokens in production (docs/security.md)",
      );
    }
    return { url, routes, close: () => app.close() };
  } catch (error) {
    await app.close();
    throw portError(error, port, host, API_LISTENER.what);
  }
}

/** Whether every name and value of a query string percent-decodes. */
function decodable(query: string): boolean {
  try {
    for (const part of query.split(/[&=]/)) decodeURIComponent(part.replace(/\+/g, " "));
    return true;
  } catch {
    return false;
  }
}
