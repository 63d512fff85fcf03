import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, axLogger, AxNoTokensError, Client, type Runtime, type TokenScope } from "ax-scheduler";
import { API_ROUTES, type RouteDoc } from "@ax/server";
import { summarise } from "@ax/worker";
import { isolate } from "../helpers/isolated.js";
import { captured } from "../helpers/log-capture.js";
import { testRuntime } from "../helpers/runtime.js";

const echo = ax.task({ name: "auth_echo" }, (input: unknown) => ({ input, password: "hunter2", apiKey: "k-123", ok: true }));
const authFlow = ax.flow({ name: "auth_flow", schedule: "0 0 1 1 *" }, (input) => {
  echo(input);
});

/** Held until a test lets it go: a run that stays unfinished while its stream is watched. */
let release: () => void = () => {};
const hold = ax.task({ name: "auth_hold" }, (_input: unknown) => new Promise<void>((resolve) => (release = resolve)));
const holdFlow = ax.flow({ name: "auth_hold_flow" }, (input) => {
  hold(input);
});

const SCOPES: TokenScope[] = ["read", "trigger", "admin"];
const RANK = { public: -1, metrics: 0, read: 0, trigger: 1, admin: 2 } as const;

describe("tokens, scopes, audit, rate limit, redaction", { timeout: 120_000 }, () => {
  const env = isolate("auth");
  const log = captured();
  let runtime: Runtime | undefined;
  let client: Client;
  let redis: Redis;
  let url: string;
  const token: Record<string, string> = {};
  let runId: string;

  /** The failure counter is per client address: tests that are not about it start from zero. */
  const forgetFailures = async () => {
    const keys = await redis.keys(`${env.prefix}:auth-failures:*`);
    if (keys.length) await redis.del(...keys);
  };

  const call = async (route: string, options: { token?: string | undefined; params?: Record<string, string>; body?: unknown } = {}) => {
    const [method, path] = route.split(" ") as [string, string];
    const filled = path.replace(/:(\w+)/g, (_m, name: string) => encodeURIComponent(options.params?.[name] ?? "x"));
    const abort = new AbortController();
    const response = await fetch(`${url}${filled}`, {
      method,
      headers: {
        ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
        ...(options.body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: abort.signal,
    });
    // GET /api/events never ends: the status is all a caller here needs.
    const text = response.headers.get("content-type")?.includes("event-stream") ? "" : await response.text();
    abort.abort();
    return { status: response.status, text, headers: response.headers };
  };

  beforeAll(async () => {
    redis = new Redis(env.redis);
    const refused = testRuntime(env, { flows: [authFlow], roles: ["api"], port: 0, insecureNoAuth: false });
    await expect(refused.start()).rejects.toBeInstanceOf(AxNoTokensError);

    client = new Client({ storage: env.storage, redis: env.redis, prefix: env.prefix });
    for (const scope of SCOPES) token[scope] = (await client.tokens.create({ name: `t_${scope}`, scope })).token;
    token.expired = (await client.tokens.create({ name: "t_expired", scope: "admin", expires: "1ms" })).token;

    runtime = testRuntime(env, {
      flows: [authFlow, holdFlow],
      roles: ["coordinator", "worker", "api"],
      port: 0,
      insecureNoAuth: false,
      logger: axLogger({ level: "info", redact: ["input.card"] }, log.stream),
    });
    await runtime.start();
    url = runtime.url!;
    runId = await client.triggerFlow("auth_flow", { user: "u1" });
    await client.waitForRun(runId, { timeout: "20s" });
  });

  afterAll(async () => {
    await runtime?.stop();
    await client?.close();
    redis?.disconnect();
    await env.cleanup();
  });

  it("every route declares a scope, and every route that changes something needs more than read", () => {
    for (const [route, doc] of Object.entries(API_ROUTES) as [string, RouteDoc][]) {
      expect(["public", "metrics", ...SCOPES], route).toContain(doc.scope);
      if (!route.startsWith("GET ")) expect(RANK[doc.scope], route).toBeGreaterThanOrEqual(RANK.trigger);
    }
  });

  it("every route x every scope: allowed, 403, 401; a refused request writes nothing", async () => {
    // Parameters that would change something if the request got through.
    const live = {
      params: { id: runId, flow: "auth_flow", name: "t_admin", task: "auth_echo", version: "1" },
      bodies: {
        "POST /api/flows/:flow/runs": { payload: { user: "evil" } },
        "POST /api/runs/:id/rerun": { only: "all" },
        "POST /api/flows/:flow/backfills": { from: "2020-01-01T00:00:00Z", to: "2022-01-01T00:00:00Z" },
        "POST /api/config": { yaml: "max_concurrency: 3\n", author: "evil" },
        "POST /api/tokens": { name: "evil", scope: "admin" },
      } as Record<string, unknown>,
    };
    // Parameters that touch nothing, for the calls that are let through.
    const inert = { id: randomUUID(), flow: "no_such_flow", name: "no_such_token", task: "no_such_task", version: "999" };
    const snapshot = async () => ({
      rows: await env.sql(
        `select (select count(*) from runs) runs, (select count(*) from node_runs) nodes, (select count(*) from audit_log) audit,
                (select count(*) from config_versions) config, (select count(*) from backfills) backfills,
                (select string_agg(name, ',' order by name) from api_tokens) tokens, (select bool_or(paused) from schedules) paused`,
      ),
      run: (await client.getRun(runId)).status,
    });
    const before = await snapshot();

    let checked = 0;
    for (const [route, doc] of Object.entries(API_ROUTES) as [string, RouteDoc][]) {
      const needed = doc.scope === "metrics" ? "read" : doc.scope;
      if (needed === "public") {
        expect((await call(route)).status, route).toBe(200);
        continue;
      }
      const body = live.bodies[route] ?? (route.startsWith("GET ") ? undefined : {});
      for (const bad of [undefined, "not-a-token", `${token.admin!.slice(0, -2)}xx`, token.expired]) {
        const answer = await call(route, { token: bad, params: live.params, body });
        expect(answer.status, `${route} with ${bad ?? "no token"}`).toBe(401);
        expect(JSON.parse(answer.text).error).toBe("AxUnauthorizedError");
        await forgetFailures();
      }
      for (const scope of SCOPES) {
        if (RANK[scope] >= RANK[needed]) {
          const answer = await call(route, { token: token[scope], params: inert, body: route.startsWith("GET ") ? undefined : {} });
          expect([401, 403, 429], `${route} as ${scope}: ${answer.text}`).not.toContain(answer.status);
        } else {
          const answer = await call(route, { token: token[scope], params: live.params, body });
          expect(answer.status, `${route} as ${scope}`).toBe(403);
          expect(JSON.parse(answer.text).message).toContain(`scope "${needed}"`);
        }
        checked++;
      }
    }
    expect(checked).toBe(SCOPES.length * Object.values(API_ROUTES).filter((d) => d.scope !== "public").length);
    expect(await snapshot()).toEqual(before);
  });

  it("the event stream takes its token from ?access_token= (EventSource sends no headers); other routes do not", async () => {
    const events = await fetch(`${url}/api/events?access_token=${token.read}`, { signal: AbortSignal.timeout(2000) }).catch(
      () => undefined,
    );
    expect(events?.status).toBe(200);
    await events?.body?.cancel();
    expect((await fetch(`${url}/api/runs?access_token=${token.read}`)).status).toBe(401);
    await forgetFailures();
  });

  it("open streams end within seconds of their token being revoked, saying why; reconnecting is a 401", async () => {
    const made = await call("POST /api/tokens", { token: token.admin, body: { name: "streamer", scope: "read" } });
    const streamer = JSON.parse(made.text).token as string;
    const held = await client.triggerFlow("auth_hold_flow", {});
    // EventSource sends its token in the address; the console reads a run's stream with fetch and a header.
    const paths = [`/api/events?access_token=${streamer}`, `/api/runs/${held}/stream`];
    const open = (path: string) =>
      fetch(`${url}${path}`, { headers: { authorization: `Bearer ${streamer}` }, signal: AbortSignal.timeout(30_000) });
    const streams = await Promise.all(paths.map(open));
    const readers = streams.map((events) => {
      expect(events.status).toBe(200);
      return events.body!.getReader();
    });
    await Promise.all(readers.map((reader) => reader.read()));
    const revokedAt = Date.now();
    expect((await call("DELETE /api/tokens/:name", { token: token.admin, params: { name: "streamer" } })).status).toBe(200);
    const lasts = await Promise.all(
      readers.map(async (reader) => {
        let text = "";
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return text;
          text += new TextDecoder().decode(value);
        }
      }),
    );
    expect(Date.now() - revokedAt).toBeLessThan(15_000);
    for (const [i, text] of lasts.entries()) {
      expect(text, paths[i]).toMatch(
        /event: unauthorized\ndata: \{"error":"AxUnauthorizedError","message":"the token this stream was opened with was revoked or expired; sign in with a valid token"\}\n\n$/,
      );
      expect((await open(paths[i]!)).status, paths[i]).toBe(401);
    }
    release();
    await client.waitForRun(held, { timeout: "20s" });
    await forgetFailures();
  });

  it("GET /api/session tells each token its own name, scope and expiry; without a token it is a 401", async () => {
    for (const scope of SCOPES) {
      const answer = await call("GET /api/session", { token: token[scope] });
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.text)).toEqual({ auth: true, name: `t_${scope}`, scope, expiresAt: null });
    }
    expect((await call("GET /api/session")).status).toBe(401);
  });

  it("an /api path no route serves is a 404 for any valid token, a 401 without one; the console's paths stay public", async () => {
    expect((await call("GET /api/not-a-route")).status).toBe(401);
    for (const scope of ["read", "trigger", "admin"] as const) {
      const answer = await call("GET /api/not-a-route", { token: token[scope] });
      expect(answer.status).toBe(404);
      expect(JSON.parse(answer.text)).toMatchObject({ error: "NotFound" });
    }
    expect((await call("POST /api/not-a-route", { token: token.read })).status).toBe(404);
    await forgetFailures();
  });

  it("admin changes and triggers are audited with token name and address; revoke and expiry end a token", async () => {
    const triggered = await call("POST /api/flows/:flow/runs", {
      token: token.trigger,
      params: { flow: "auth_flow" },
      body: { payload: {} },
    });
    expect(triggered.status).toBe(201);
    const newRun = JSON.parse(triggered.text).runId as string;
    expect((await call("POST /api/runs/:id/cancel", { token: token.trigger, params: { id: newRun } })).status).toBe(200);
    expect((await call("POST /api/flows/:flow/schedule/pause", { token: token.admin, params: { flow: "auth_flow" } })).status).toBe(200);
    expect((await call("POST /api/flows/:flow/schedule/resume", { token: token.admin, params: { flow: "auth_flow" } })).status).toBe(200);
    const config = await call("POST /api/config", { token: token.admin, body: { yaml: "max_concurrency: 4\n", author: "ops" } });
    expect(config.status).toBe(201);
    const made = await call("POST /api/tokens", { token: token.admin, body: { name: "short", scope: "read" } });
    expect(made.status).toBe(201);
    const short = JSON.parse(made.text).token as string;
    expect((await call("GET /api/runs", { token: short })).status).toBe(200);
    expect((await call("DELETE /api/tokens/:name", { token: token.admin, params: { name: "short" } })).status).toBe(200);
    expect((await call("GET /api/runs", { token: short })).status).toBe(401);
    await forgetFailures();

    const audit = JSON.parse((await call("GET /api/audit", { token: token.admin })).text).entries as {
      actor: string;
      action: string;
      target: string;
      ip: string;
      detail: Record<string, unknown> | null;
    }[];
    const seen = audit.map((e) => `${e.actor} ${e.action} ${e.target}`);
    expect(seen.slice(0, 7)).toEqual([
      "t_admin token.revoke short",
      "t_admin token.create short",
      `t_admin config.apply ${JSON.parse(config.text).version}`,
      "t_admin schedule.resume auth_flow",
      "t_admin schedule.pause auth_flow",
      `t_trigger run.cancel ${newRun}`,
      "t_trigger run.trigger auth_flow",
    ]);
    expect(audit[6]!.detail).toMatchObject({ runId: newRun, created: true });
    expect(audit[0]!.ip).toMatch(/127\.0\.0\.1|::1/);
    expect((await client.audit({ limit: 500 })).map((e) => `${e.actor} ${e.action} ${e.target}`)).toContainEqual(
      expect.stringMatching(/^cli:\S+ token\.create t_read$/),
    );

    const listed = await client.tokens.list();
    expect(listed.map((t) => t.name)).toEqual(["t_admin", "t_expired", "t_read", "t_trigger"]);
    expect(listed.find((t) => t.name === "t_admin")!.lastUsedAt).not.toBeNull();
    expect(listed.find((t) => t.name === "t_expired")!.expiresAt!.getTime()).toBeLessThan(Date.now());
  });

  it("failed attempts from one address are limited: the 11th within a minute is 429, even with a valid token", async () => {
    await forgetFailures();
    for (let i = 0; i < 10; i++) expect((await call("GET /api/runs", { token: `wrong-${i}` })).status).toBe(401);
    const limited = await call("GET /api/runs", { token: "wrong-again" });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await call("GET /api/runs", { token: token.read })).status).toBe(429);
    await forgetFailures();
    expect((await call("GET /api/runs", { token: token.read })).status).toBe(200);
  });

  it("requests without a token never lock the address out; wrong tokens still do, and the limit refuses no-token requests with a 401", async () => {
    await forgetFailures();
    // A console opened before signing in, many times over: far past the limit, never counted.
    for (let i = 0; i < 25; i++) {
      const answer = await call("GET /api/runs");
      expect(answer.status).toBe(401);
      expect(answer.headers.get("www-authenticate")).toBe('Bearer realm="ax"');
    }
    expect(await redis.keys(`${env.prefix}:auth-failures:*`)).toEqual([]);
    expect((await call("GET /api/runs", { token: token.read })).status).toBe(200);

    const malformed = await fetch(`${url}/api/runs`, { headers: { authorization: "Basic dXNlcjpwdw==" } });
    expect(malformed.status).toBe(401);
    expect(((await malformed.json()) as { message: string }).message).toContain("is not `Bearer <token>`");
    for (let i = 1; i < 10; i++) expect((await call("GET /api/runs", { token: `wrong-${i}` })).status).toBe(401);
    const limited = await call("GET /api/runs", { token: "wrong-again" });
    expect(limited.status).toBe(429);
    expect(JSON.parse(limited.text).message).toMatch(/retry in \d+ s/);
    expect((await call("GET /api/runs", { token: token.read })).status).toBe(429);
    // Still no-token requests get the 401 that sends a browser to its login screen, not the 429.
    expect((await call("GET /api/runs")).status).toBe(401);
    await forgetFailures();
  });

  it("secrets never reach the log: pino paths are censored and result summaries mask secret keys", async () => {
    runtime!.log.info(
      {
        req: { headers: { authorization: `Bearer ${token.admin}` } },
        db: { password: "pw-secret-1" },
        token: "tok-secret-2",
        input: { card: "4111-1111-1111-1111" },
      },
      "probe",
    );
    await sleep(50);
    const text = log.lines.join("\n");
    expect(text).toContain('"msg":"probe"');
    expect(text).toContain('"msg":"attempt finished"');
    for (const secret of [token.admin!, "pw-secret-1", "tok-secret-2", "4111-1111-1111-1111", "hunter2", "k-123"])
      expect(text).not.toContain(secret);
    expect(summarise({ Password: "x", n: { api_key: "y", authToken: "z" }, list: [{ secret: "s" }] })).toBe(
      '{"Password":"[redacted]","n":{"api_key":"[redacted]","authToken":"[redacted]"},"list":[{"secret":"[redacted]"}]}',
    );
  });

  it("/metrics needs a token unless metricsAuth is false", async () => {
    expect((await call("GET /metrics")).status).toBe(401);
    expect((await call("GET /metrics", { token: token.read })).status).toBe(200);
    await forgetFailures();
    const open = testRuntime(env, { flows: [authFlow], roles: ["api"], port: 0, insecureNoAuth: false, metricsAuth: false });
    await open.start();
    try {
      expect((await fetch(`${open.url}/metrics`)).status).toBe(200);
      expect((await fetch(`${open.url}/api/runs`)).status).toBe(401);
    } finally {
      await open.stop();
      await forgetFailures();
    }
  });
});
