import type { FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from "fastify";
import type { Logger } from "pino";
import { AxTokenNameError } from "@ax/common";
import { createApiToken, listApiTokens, listAudit, revokeApiToken, type Db } from "@ax/store";
import { auditQuery, parseQuery, tokenBody, tokenNameParams } from "./api-schemas.js";
import { actorOf } from "./auth.js";
import { bodyOf } from "./json-body.js";

type App = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, Logger>;

/** `GET /api/audit`, `GET|POST /api/tokens`, `DELETE /api/tokens/:name` (all admin). */
export function registerTokenRoutes(app: App, db: Db): void {
  app.get("/api/audit", async (request) => ({ entries: await listAudit(db, parseQuery(auditQuery, request.query)) }));

  app.get("/api/tokens", async () => ({ tokens: await listApiTokens(db) }));

  app.post("/api/tokens", async (request, reply) => {
    const body = tokenBody.parse(bodyOf(request));
    try {
      const created = await createApiToken(
        db,
        { name: body.name, scope: body.scope, expiresAt: body.expiresAt === undefined ? undefined : new Date(body.expiresAt) },
        actorOf(request),
      );
      return reply.status(201).send(created);
    } catch (error) {
      if (error instanceof AxTokenNameError) return reply.status(409).send({ error: error.name, message: error.message });
      throw error;
    }
  });

  app.delete<{ Params: { name: string } }>("/api/tokens/:name", async (request, reply) => {
    const { name } = tokenNameParams.parse(request.params);
    try {
      await revokeApiToken(db, name, actorOf(request));
      return { revoked: name };
    } catch (error) {
      if (error instanceof AxTokenNameError) return reply.status(404).send({ error: error.name, message: error.message });
      throw error;
    }
  });
}
