import type { FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from "fastify";
import type { Logger } from "pino";
import { z } from "zod";
import { readTaskLogs, rerunSource, type Db } from "@ax/store";
import { AxRunNotFoundError } from "@ax/common";
import { logsQuery } from "./log-schemas.js";

type App = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, Logger>;

/** `?node=` names no node of the run: a typo would otherwise read as "this node logged nothing". */
export class AxNodeNotFoundError extends Error {
  override name = "AxNodeNotFoundError";
  readonly statusCode = 404;
  constructor(
    readonly runId: string,
    readonly nodeKey: string,
    known: string[],
  ) {
    super(`run ${runId} has no node "${nodeKey}"; its nodes: ${known.join(", ")}`);
  }
}

/** `GET /api/runs/:id/logs`: the `ax.context().log` lines of a run's attempts, as stored. */
export function registerLogRoutes(app: App, deps: { db: Db }): void {
  app.get<{ Params: { id: string } }>("/api/runs/:id/logs", async (request) => {
    const query = logsQuery.parse(request.query);
    const id = z.uuid().safeParse(request.params.id);
    const logs = id.success ? await readTaskLogs(deps.db, id.data, query) : undefined;
    if (!logs) throw new AxRunNotFoundError(request.params.id);
    // Only an empty answer needs the node checked: lines prove the node exists.
    if (query.node !== undefined && logs.lines.length === 0 && id.success) {
      const keys = (await rerunSource(deps.db, id.data))?.nodes.map((n) => n.key) ?? [];
      if (!keys.includes(query.node)) throw new AxNodeNotFoundError(id.data, query.node, keys.sort());
    }
    return logs;
  });
}
