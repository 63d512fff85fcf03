import { existsSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, normalize } from "node:path";
import fastifyStatic from "@fastify/static";
import type { FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from "fastify";
import type { Logger } from "pino";
import { z } from "zod";
import {
  flowOverview,
  liveDefinerCounts,
  getRunInfo,
  unknownFlowError,
  listFlowVersions,
  listWorkerConfigVersions,
  runningAttemptsByWorker,
  type Db,
} from "@ax/store";
import { explainWaitingNodes, RETIRE_LIVE_MS, type QueueRegistry } from "@ax/coordinator";
import { AxRunNotFoundError } from "@ax/common";
import { endStreamWhenUnauthorized } from "./auth.js";
import { RunFeed } from "./run-feed.js";
import { answerNoRoute } from "./no-route.js";
import { flowNameParams, flowOverviewQuery, parseQuery } from "./api-schemas.js";

type App = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, Logger>;

export interface ConsoleDeps {
  db: Db;
  queues: QueueRegistry;
  /** The built console (`packages/console/dist`); undefined: where the @ax/console package is. */
  consoleDir?: string | undefined;
  /** How often a watched run is read for `GET /api/runs/:id/stream`. @defaultValue 300 */
  streamPollMs?: number | undefined;
}

/** A worker is live when it heartbeated this recently (its lease is 5 s by default). */
const LIVE_WORKER_MS = 10_000;

function defaultConsoleDir(): string | undefined {
  try {
    return join(dirname(createRequire(import.meta.url).resolve("@ax/console/package.json")), "dist");
  } catch {
    return undefined;
  }
}

/** The web console at `/`, its live run feed, and the routes only it needs. */
export async function registerConsoleRoutes(app: App, deps: ConsoleDeps): Promise<void> {
  const readRun = async (id: string) => {
    const run = await getRunInfo(deps.db, id);
    return run && explainWaitingNodes(deps.db, deps.queues, run);
  };
  const feed = new RunFeed(readRun, (err, runId) => app.log.warn({ err, runId }, "run stream poll failed"), deps.streamPollMs);
  // preClose: the server waits for open connections before onClose hooks run, and a stream stays open.
  app.addHook("preClose", async () => feed.close());

  app.get<{ Params: { id: string } }>("/api/runs/:id/stream", async (request, reply) => {
    const id = z.uuid().safeParse(request.params.id);
    if (!id.success || !(await getRunInfo(deps.db, id.data))) throw new AxRunNotFoundError(request.params.id);
    reply.hijack();
    reply.raw.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      connection: "keep-alive",
      // Tells nginx not to buffer the stream.
      "x-accel-buffering": "no",
    });
    reply.raw.write(": watching\n\n");
    feed.watch(id.data, reply.raw);
    endStreamWhenUnauthorized(request, reply.raw, { db: deps.db, log: app.log });
  });

  app.get("/api/workers", async () => {
    const [workers, running] = await Promise.all([listWorkerConfigVersions(deps.db, LIVE_WORKER_MS), runningAttemptsByWorker(deps.db)]);
    return {
      workers: workers.map((w) => ({ ...w, heartbeatAt: w.heartbeatAt.toISOString(), running: running.get(w.id) ?? 0 })),
    };
  });

  // The Flows page in one request: a card per flow asking for its version and runs made 2 per flow, every 5 s.
  app.get("/api/flow-overview", async (request) => {
    const { runs = 30 } = parseQuery(flowOverviewQuery, request.query);
    const [flows, definers] = await Promise.all([flowOverview(deps.db, runs), liveDefinerCounts(deps.db, RETIRE_LIVE_MS)]);
    return { flows: flows.map((flow) => ({ ...flow, definedBy: definers.get(flow.name) ?? 0 })) };
  });

  app.get<{ Params: { name: string } }>("/api/flows/:name/versions", async (request) => {
    const { name } = flowNameParams.parse(request.params);
    const versions = await listFlowVersions(deps.db, name);
    if (versions.length === 0) throw await unknownFlowError(deps.db, name);
    return { versions };
  });

  const root = deps.consoleDir ?? defaultConsoleDir();
  const built = root !== undefined && existsSync(join(root, "index.html"));
  if (built) await app.register(fastifyStatic, { root, serve: false });
  app.get("/*", async (request, reply) => {
    const path = normalize(decodeURIComponent(new URL(request.url, "http://x").pathname)).replace(/^[/\\]+/, "");
    if (path.startsWith("api/")) return answerNoRoute(request, reply);
    if (!built) {
      return reply
        .status(404)
        .type("text/plain")
        .send("The web console is not built: run `npx -y pnpm@9.15.9 --filter @ax/console build`, then reload. The API is under /api.");
    }
    const file = path !== "" && isFile(join(root, path)) ? path : "index.html";
    // Vite names assets by content hash: they never change, index.html must be fetched again each time.
    return file.startsWith("assets/")
      ? reply.sendFile(file, { maxAge: "365d", immutable: true })
      : reply.header("cache-control", "no-cache").sendFile(file, { cacheControl: false });
  });
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
