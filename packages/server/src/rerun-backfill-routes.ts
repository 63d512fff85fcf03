import type { FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from "fastify";
import type { Logger } from "pino";
import { z } from "zod";
import { backfillInfo, listBackfills, type Db } from "@ax/store";
import { cancelBackfill, rerunRun, retryBackfill, startBackfill, type QueueRegistry, type RerunDeps } from "@ax/coordinator";
import { AxBackfillNotFoundError, AxRunNotFoundError } from "@ax/common";
import { backfillBody, backfillsQuery, flowParams, parseQuery, rerunBody } from "./api-schemas.js";
import { bodyOf } from "./json-body.js";

/**
 * `POST /api/runs/:id/rerun`, `POST /api/flows/:flow/backfills`, `GET /api/backfills[/:id]`,
 * `POST /api/backfills/:id/cancel|retry`. The API process defines no tasks, so reruns skip the check
 * that the run's tasks are still defined (see Client.rerun).
 */
type App = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, Logger>;

export function registerRerunBackfillRoutes(
  app: App,
  deps: { db: Db; queues: QueueRegistry; businessKeyOf: RerunDeps["businessKeyOf"] },
): void {
  app.post<{ Params: { id: string } }>("/api/runs/:id/rerun", async (request, reply) => {
    const body = rerunBody.parse(bodyOf(request));
    const id = z.uuid().safeParse(request.params.id);
    const runId = id.success ? await rerunRun(deps, id.data, body) : undefined;
    if (!runId) throw new AxRunNotFoundError(request.params.id);
    return reply.status(201).send({ runId, rerunOf: id.data });
  });

  app.post<{ Params: { flow: string } }>("/api/flows/:flow/backfills", async (request, reply) => {
    const { flow } = flowParams.parse(request.params);
    const body = backfillBody.parse(bodyOf(request));
    const started = await startBackfill(deps, { ...body, flow, from: new Date(body.from), to: new Date(body.to) });
    return reply.status(201).send(started);
  });

  app.get("/api/backfills", async (request) => {
    const { limit } = parseQuery(backfillsQuery, request.query);
    return { backfills: await listBackfills(deps.db, limit) };
  });

  app.get<{ Params: { id: string } }>("/api/backfills/:id", async (request) => {
    const id = z.uuid().safeParse(request.params.id);
    const found = id.success ? await backfillInfo(deps.db, id.data) : undefined;
    if (!found) throw new AxBackfillNotFoundError(request.params.id);
    return found;
  });

  app.post<{ Params: { id: string } }>("/api/backfills/:id/cancel", async (request) => {
    const id = z.uuid().safeParse(request.params.id);
    if (!id.success) throw new AxBackfillNotFoundError(request.params.id);
    return cancelBackfill(deps, id.data);
  });

  app.post<{ Params: { id: string } }>("/api/backfills/:id/retry", async (request) => {
    const id = z.uuid().safeParse(request.params.id);
    if (!id.success) throw new AxBackfillNotFoundError(request.params.id);
    return retryBackfill(deps, id.data);
  });
}
