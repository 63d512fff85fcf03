import type { FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from "fastify";
import type { Logger } from "pino";
import { listAlerts, type Db } from "@ax/store";
import { alertsQuery, parseQuery } from "./api-schemas.js";

type App = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, Logger>;

/** `GET /api/alerts`: the history of sent alerts, newest first, paged by id. */
export function registerAlertRoutes(app: App, db: Db): void {
  app.get("/api/alerts", async (request) => ({ alerts: await listAlerts(db, parseQuery(alertsQuery, request.query)) }));
}
