import type { ServerResponse } from "node:http";
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from "fastify";
import type { Logger } from "pino";
import { AxForbiddenError, AxTooManyAuthFailuresError, AxUnauthorizedError, isStoreOutage } from "@ax/common";
import { RepeatedErrors, type QueueRegistry } from "@ax/coordinator";
import { scopeCovers, verifyApiToken, within, writeAudit, type Actor, type Db, type Json, type TokenScope } from "@ax/store";
import { API_ROUTES, type RouteDoc } from "./api-routes.js";
import { ScrapeTokens, type VerifiedToken } from "./scrape-tokens.js";

export interface AuthOptions {
  /** Serve every route to anyone, with no token (`ax dev`, a network you trust). @defaultValue false */
  insecureNoAuth?: boolean | undefined;
  /** `/metrics` on the API port needs a token (any scope); false: public, for a scraper on a private network. @defaultValue true */
  metricsAuth?: boolean | undefined;
  /** Wrong tokens (presented but unknown, revoked, expired or malformed) per client address per minute before the API answers 429. @defaultValue 10 */
  maxFailuresPerMinute?: number | undefined;
}

type App = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, Logger>;

const FAILURE_WINDOW_MS = 60_000;
/** Counts one wrong token; the window starts at the first. A script: `PEXPIRE … NX` needs Redis 7, ax runs on 5.0. */
const COUNT_FAILURE = `local n = redis.call("INCR", KEYS[1])
if n == 1 then redis.call("PEXPIRE", KEYS[1], ARGV[1]) end
return n`;
/** How long a request waits for the failure limiter's Redis before going on without it. */
const LIMITER_WAIT_MS = 250;

const CREATE_HINT = "create a token with `ax token create --name <name> --scope read|trigger|admin`";

/** Answer keys worth keeping in an audit row: ids and outcomes, never payloads or YAML. */
const AUDIT_DETAIL_KEYS = [
  "runId",
  "rerunOf",
  "backfillId",
  "version",
  "created",
  "cancelled",
  "status",
  "paused",
  "changed",
  "cancelledRuns",
  "ticks",
  "runs",
  "archived",
  "dryRun",
];

const actors = new WeakMap<FastifyRequest, Actor>();
/** The token a request was let through with, as `GET /api/session` describes it. */
const sessions = new WeakMap<FastifyRequest, VerifiedToken>();
/** The token a request was let through with, for a long-lived answer to check it again. */
const bearers = new WeakMap<FastifyRequest, string>();

/** Whether the token `request` was let through with still holds (not revoked, not expired). True without auth. */
async function stillAuthorized(request: FastifyRequest, db: Db): Promise<boolean> {
  const bearer = bearers.get(request);
  return bearer === undefined || (await verifyApiToken(db, bearer)) !== undefined;
}

/** How often an open stream's token is checked again. */
const STREAM_RECHECK_MS = 5000;

/**
 * Ends a stream (`/api/events`, a run's `/stream`) within a few seconds of the token it was
 * opened with being revoked or expiring, rather than for as long as its connection stays open. Its
 * last event, `unauthorized`, says why; the client's next request gets the 401.
 */
export function endStreamWhenUnauthorized(request: FastifyRequest, res: ServerResponse, deps: { db: Db; log: Logger }): void {
  if (!bearers.has(request)) return;
  const recheck = setInterval(() => {
    stillAuthorized(request, deps.db).then(
      (ok) => {
        if (ok || res.writableEnded) return;
        const error = new AxUnauthorizedError("the token this stream was opened with was revoked or expired; sign in with a valid token");
        res.end(`event: unauthorized\ndata: ${JSON.stringify({ error: error.name, message: error.message })}\n\n`);
      },
      // The path only: the query may hold the token itself (`?access_token=`).
      (err: unknown) =>
        deps.log.warn({ err, path: request.url.split("?", 1)[0] }, "could not check a stream's token again; checking at the next interval"),
    );
  }, STREAM_RECHECK_MS);
  recheck.unref();
  res.on("close", () => clearInterval(recheck));
}

/** Who made the request (the token's name, or `anonymous` without auth), once the auth hook let it through. */
export function actorOf(request: FastifyRequest): Actor {
  return actors.get(request) ?? { name: "anonymous", ip: request.ip };
}

export function routeOf(request: FastifyRequest): { key: string; doc: RouteDoc | undefined } {
  const method = request.method === "HEAD" ? "GET" : request.method;
  const key = `${method} ${request.routeOptions.url ?? request.url.split("?")[0]}`;
  return { key, doc: API_ROUTES[key] };
}

/**
 * The scope a request needs. A route missing from API_ROUTES is public outside `/api` (the
 * console's static files) and admin-only inside it, so a route added without a scope fails closed.
 */
function neededScope(request: FastifyRequest, doc: RouteDoc | undefined, metricsAuth: boolean): TokenScope | "public" {
  const api = request.url === "/api" || request.url.startsWith("/api/") || request.url.startsWith("/api?");
  // An `/api` path no route serves (the console's catch-all, or nothing) gets its 404 for any valid
  // token: asking for admin would send a caller chasing a typo to widen its token.
  if (api && (request.routeOptions.url === undefined || doc?.scope === "public")) return "read";
  if (!doc) return api ? "admin" : "public";
  if (doc.scope === "metrics") return metricsAuth ? "read" : "public";
  return doc.scope;
}

/**
 * Wrong tokens per client address, counted in Redis so every API process of the cluster shares the
 * limit. It fails open: while Redis does not answer within LIMITER_WAIT_MS, requests are checked
 * against their token alone (logged once a minute), since waiting on Redis would hang every
 * authenticated route for the whole outage, and the token check, not the limit, is what keeps
 * callers out.
 */
class FailureLimiter {
  private readonly errors: RepeatedErrors;

  constructor(
    private readonly redis: QueueRegistry["connection"],
    private readonly prefix: string,
    private readonly max: number,
    log: Logger,
  ) {
    this.errors = new RepeatedErrors(log);
  }

  private key(ip: string): string {
    return `${this.prefix}:auth-failures:${ip}`;
  }

  private async bounded<T>(work: Promise<T>, fallback: T): Promise<T> {
    const answer = await within(work, LIMITER_WAIT_MS);
    if (answer.done) {
      this.errors.recovered("auth failure limit: Redis answers again; wrong tokens are counted again");
      return answer.value;
    }
    this.errors.warn(
      answer.error,
      { waitedMs: LIMITER_WAIT_MS },
      "auth failure limit: Redis did not answer; tokens are still checked, but wrong ones are not counted until it does",
    );
    return fallback;
  }

  /** Seconds until the address may try again; 0 while under the limit, or while Redis does not answer. */
  async blockedFor(ip: string): Promise<number> {
    const read = this.redis
      .multi()
      .get(this.key(ip))
      .pttl(this.key(ip))
      .exec()
      .then((r) => r?.map(([, v]) => v) ?? []);
    const [count, ttl] = await this.bounded(read, []);
    return Number(count ?? 0) >= this.max ? Math.max(1, Math.ceil(Number(ttl) / 1000)) : 0;
  }

  async fail(ip: string): Promise<void> {
    await this.bounded(this.redis.eval(COUNT_FAILURE, 1, this.key(ip), FAILURE_WINDOW_MS), null);
  }
}

/**
 * One onRequest hook decides every request from the route -> scope table (API_ROUTES): 401 without
 * a valid token, 403 when its scope is too small, 429 after too many wrong tokens from one address.
 * It runs before the body is read, so a refused request never reaches a handler and writes
 * nothing. One onSend hook writes the audit row of each successful call of an audited route.
 * `GET /api/session` tells a caller what its own token may do.
 */
export function registerAuth(app: App, deps: { db: Db; queues: QueueRegistry; log: Logger }, options: AuthOptions = {}): void {
  const limiter = new FailureLimiter(deps.queues.connection, deps.queues.prefix, options.maxFailuresPerMinute ?? 10, deps.log);
  const metricsAuth = options.metricsAuth ?? true;
  const scrapeTokens = new ScrapeTokens();

  /** The token `bearer` names, if valid; for `/metrics`, the one it named lately while PostgreSQL is away. */
  const verify = async (bearer: string, scrape: boolean): Promise<VerifiedToken | undefined> => {
    try {
      const token = await verifyApiToken(deps.db, bearer);
      if (scrape) scrapeTokens.remember(bearer, token);
      return token;
    } catch (error) {
      const remembered = scrape && isStoreOutage(error) ? scrapeTokens.recall(bearer) : undefined;
      if (remembered) return remembered;
      throw error;
    }
  };

  const refuse = (reply: FastifyReply, status: number, error: Error) =>
    reply.status(status).send({ error: error.name, message: error.message });
  const unauthorized = (reply: FastifyReply, message: string) =>
    refuse(reply.header("www-authenticate", 'Bearer realm="ax"'), 401, new AxUnauthorizedError(message));

  app.addHook("onRequest", async (request, reply) => {
    const { key, doc } = routeOf(request);
    const needed = neededScope(request, doc, metricsAuth);
    if (needed === "public" || options.insecureNoAuth) return;
    const ip = request.ip;
    const header = request.headers.authorization;
    const query = doc?.tokenInQuery ? (request.query as { access_token?: unknown }).access_token : undefined;
    // No credentials at all is not a guess: a browser opening the console before signing in sends
    // none, so it gets its 401 without touching the limiter and cannot lock its own address out.
    if (header === undefined && typeof query !== "string")
      return unauthorized(reply, `this route needs \`Authorization: Bearer <token>\`; ${CREATE_HINT}`);
    const wait = await limiter.blockedFor(ip);
    if (wait > 0) {
      reply.header("retry-after", String(wait));
      return refuse(reply, 429, new AxTooManyAuthFailuresError(wait));
    }
    const bearer = header?.match(/^Bearer\s+(\S+)\s*$/i)?.[1] ?? (typeof query === "string" ? query : undefined);
    const token = bearer ? await verify(bearer, doc?.scope === "metrics") : undefined;
    if (!token) {
      await limiter.fail(ip);
      return unauthorized(
        reply,
        bearer
          ? "the bearer token is unknown, revoked or expired; create a new one with `ax token create`"
          : `the Authorization header is not \`Bearer <token>\`; ${CREATE_HINT}`,
      );
    }
    if (!scopeCovers(token.scope, needed)) return refuse(reply, 403, new AxForbiddenError(needed, token.scope, key));
    actors.set(request, { name: token.name, ip });
    sessions.set(request, token);
    if (bearer) bearers.set(request, bearer);
  });

  app.get("/api/session", async (request) => {
    const token = sessions.get(request);
    if (!token) return { auth: false, name: null, scope: "admin", expiresAt: null };
    return { auth: true, name: token.name, scope: token.scope, expiresAt: token.expiresAt?.toISOString() ?? null };
  });

  app.addHook("onSend", async (request, reply, payload) => {
    const { doc } = routeOf(request);
    if (!doc?.audit || reply.statusCode >= 300) return payload;
    const params = request.params as Record<string, string> | undefined;
    const answer = parseAnswer(payload);
    const version = answer.version === undefined ? undefined : String(answer.version);
    const group = typeof answer.group === "string" ? answer.group : undefined;
    const target = params?.id ?? params?.flow ?? params?.name ?? version ?? group;
    const detail = Object.fromEntries(AUDIT_DETAIL_KEYS.filter((k) => answer[k] !== undefined).map((k) => [k, answer[k] as Json]));
    try {
      await writeAudit(deps.db, { actor: actorOf(request), action: doc.audit, target, detail });
    } catch (error) {
      // The change is made and committed; failing the answer now would invite a retry that repeats it.
      deps.log.error({ err: error, action: doc.audit, target, requestId: request.id }, "audit log row not written");
    }
    return payload;
  });
}

function parseAnswer(payload: unknown): Record<string, unknown> {
  if (typeof payload !== "string") return {};
  try {
    const value = JSON.parse(payload) as unknown;
    return value !== null && typeof value === "object" ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
