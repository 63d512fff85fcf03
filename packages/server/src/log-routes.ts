import type { FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from "fastify";
import type { Logger } from "pino";
import { z } from "zod";
import { readTaskLogs, type Db } from "@ax/store";
import { AxRunNotFoundError } from "@ax/common";
import { parseQuery } from "./api-schemas.js";
import { logsQuery } from "./log-schemas.js";

type App = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, Logger>;

/**
 * `GET /api/runs/:id/logs`: the `ax.context().log` lines of a run's attempts, as stored. A `node`
 * the run does not have is readTaskLogs' AxNodeNotFoundError, a 404 by its statusCode.
 */
export function registerLogRoutes(app: App, deps: { db: Db }): void {
  app.get<{ Params: { id: string } }>("/api/runs/:id/logs", async (request) => {
    const query = parseQuery(logsQuery, request.query);
    const id = z.uuid().safeParse(request.params.id);
    const logs = id.success ? await readTaskLogs(deps.db, id.data, query) : undefined;
    if (!logs) throw new AxRunNotFoundError(request.params.id);
    return logs;
  });
}
