import type { ServerResponse } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import type { FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from "fastify";
import type { Logger } from "pino";
import { EventStreamReader, eventsAfter, type AxEvent, type QueueRegistry } from "@ax/coordinator";
import type { Db } from "@ax/store";
import { eventsQuery, parseQuery } from "./api-schemas.js";
import { endStreamWhenUnauthorized } from "./auth.js";

type App = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, Logger>;

const KEEPALIVE_MS = 15_000;
const CATCH_UP_BATCH = 500;
/** How long a replay waits for the stream's reader to place itself (Redis may be slow to answer). */
const POSITION_WAIT_MS = 2000;

/** Stream ids `ms-seq` in order. */
function idAfter(a: string, b: string): boolean {
  const [am, as] = a.split("-").map(BigInt) as [bigint, bigint];
  const [bm, bs] = b.split("-").map(BigInt) as [bigint, bigint];
  return am > bm || (am === bm && as > bs);
}

const frame = (event: AxEvent) => `id: ${event.id}\ndata: ${JSON.stringify(event)}\n\n`;

/**
 * `GET /api/events?after=<id>`: the cluster's events as server-sent events. One reader of the
 * stream per API process fans out to every client; `after` (or EventSource's `Last-Event-ID`)
 * first replays what the stream still holds after that id.
 */
export function registerEventRoutes(app: App, deps: { db: Db; queues: QueueRegistry; log: Logger }): void {
  const clients = new Set<(events: AxEvent[]) => void>();
  const open = new Set<ServerResponse>();
  let reader: EventStreamReader | undefined;
  const ensureReader = () => {
    if (reader) return;
    reader = new EventStreamReader(deps.queues.connection, deps.queues.prefix, deps.log, (events) => {
      for (const client of clients) client(events);
    });
    reader.start();
  };

  // Open streams would keep the server from closing: end them first.
  app.addHook("preClose", async () => {
    for (const res of open) res.end();
    await reader?.stop();
  });

  app.get("/api/events", async (request, reply) => {
    const query = parseQuery(eventsQuery, request.query);
    const lastEventId = request.headers["last-event-id"];
    const header = typeof lastEventId === "string" && query.after === undefined ? lastEventId : undefined;
    // A browser resends the id it was last sent; anything else is a caller's mistake, which would
    // otherwise filter out every event after it without a word.
    const checked = header === undefined ? undefined : eventsQuery.shape.after.safeParse(header);
    if (checked && !checked.success) {
      return reply
        .status(400)
        .send({ error: "BadRequest", message: `Last-Event-ID: ${checked.error.issues.map((i) => i.message).join("; ")}` });
    }
    const given = query.after ?? header;
    const after = given === undefined || given.includes("-") ? given : `${given}-0`;
    ensureReader();

    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      connection: "keep-alive",
      "x-accel-buffering": "no",
    });
    // A HEAD (a load balancer's check) gets the stream's headers, not a stream that never ends.
    if (request.method === "HEAD") {
      res.end();
      return;
    }
    res.write(": ax events\n\n");
    open.add(res);

    // Live events that arrive during the replay wait, then go out without repeating what the replay sent.
    let held: AxEvent[] | undefined = after === undefined ? undefined : [];
    let last = after;
    const send = (events: AxEvent[]) => {
      for (const event of events) {
        if (last !== undefined && !idAfter(event.id, last)) continue;
        res.write(frame(event));
        last = event.id;
      }
    };
    const client = (events: AxEvent[]) => {
      if (held) held.push(...events);
      else send(events);
    };
    clients.add(client);
    const keepalive = setInterval(() => res.write(": keepalive\n\n"), KEEPALIVE_MS);
    keepalive.unref();
    endStreamWhenUnauthorized(request, res, deps);
    res.on("close", () => {
      clients.delete(client);
      open.delete(res);
      clearInterval(keepalive);
    });

    if (after !== undefined) {
      try {
        // Replayed from after the reader placed itself: an event added in between is in one or the other.
        await Promise.race([reader!.positioned, sleep(POSITION_WAIT_MS, undefined, { ref: false })]);
        for (;;) {
          const batch = await eventsAfter(deps.queues.connection, deps.queues.prefix, last!, CATCH_UP_BATCH);
          send(batch);
          if (batch.length < CATCH_UP_BATCH) break;
        }
      } catch (error) {
        deps.log.warn({ err: error }, "could not replay events for an /api/events client; it gets live events only");
      }
      const pending = held ?? [];
      held = undefined;
      send(pending);
    }
  });
}
