import type { FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from "fastify";
import type { Logger } from "pino";
import { AxPruneBusyError, AxPruneUnavailableError, AxRetentionError } from "@ax/common";
import { pruneBody } from "./api-schemas.js";
import { bodyOf } from "./json-body.js";

/**
 * The SDK's prune of the history (`Client.prune`), which owns the retention rules (the shortest
 * period, how a duration is written); this package must not import the SDK, which depends on it.
 */
export interface HistoryService {
  prune(request: { olderThan: string; archive?: boolean; dryRun?: boolean; batch?: number; signal: AbortSignal }): Promise<object>;
}

type App = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, Logger>;

/** `POST /api/history/prune`: `ax prune` for a process that holds its history, the embedded one of `ax dev` above all. */
export function registerHistoryRoutes(app: App, service: HistoryService | undefined): void {
  app.post("/api/history/prune", async (request, reply) => {
    if (!service) {
      const error = new AxPruneUnavailableError();
      return reply.status(501).send({ error: error.name, message: error.message });
    }
    const body = pruneBody.parse(bodyOf(request));
    // A caller that goes away (Ctrl-C in `ax prune`) stops the prune after its current batch, as
    // Ctrl-C does on the direct path; what was deleted stays deleted, and the next call continues.
    const gone = new AbortController();
    reply.raw.once("close", () => {
      if (!reply.raw.writableFinished) gone.abort();
    });
    try {
      return await service.prune({ ...body, signal: gone.signal });
    } catch (error) {
      if (error instanceof AxPruneBusyError) return reply.status(409).send({ error: error.name, message: error.message });
      if (error instanceof AxRetentionError) return reply.status(400).send({ error: error.name, message: error.message });
      throw error;
    }
  });
}
