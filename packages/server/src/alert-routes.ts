import type { FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from "fastify";
import type { Logger } from "pino";
import { muteAlerts, unmuteAlerts } from "@ax/coordinator";
import { listAlertMutes, listAlerts, writeAudit, type Db } from "@ax/store";
import { alertsQuery, muteBody, muteIdParams, mutesQuery, parseQuery } from "./api-schemas.js";
import { actorOf } from "./auth.js";
import { bodyOf } from "./json-body.js";

type App = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, Logger>;

/** `GET /api/alerts`: the history of sent alerts, newest first, paged by id; `/api/alerts/mutes`: operators' mutes. */
export function registerAlertRoutes(app: App, db: Db): void {
  app.get("/api/alerts", async (request) => ({ alerts: await listAlerts(db, parseQuery(alertsQuery, request.query)) }));

  app.get("/api/alerts/mutes", async (request) => ({ mutes: await listAlertMutes(db, parseQuery(mutesQuery, request.query)) }));

  app.post("/api/alerts/mutes", async (request, reply) => {
    const body = muteBody.parse(bodyOf(request));
    const actor = actorOf(request);
    const mute = await muteAlerts(db, { ...body, forMs: body.for, createdBy: actor.name });
    await writeAudit(db, { actor, action: "alerts.mute", target: String(mute.id), detail: { group: mute.group } });
    return reply.status(201).send(mute);
  });

  app.delete<{ Params: { id: string } }>("/api/alerts/mutes/:id", async (request) => {
    const { id } = muteIdParams.parse(request.params);
    const actor = actorOf(request);
    const mute = await unmuteAlerts(db, id);
    await writeAudit(db, { actor, action: "alerts.unmute", target: String(id), detail: { group: mute.group } });
    return mute;
  });
}
