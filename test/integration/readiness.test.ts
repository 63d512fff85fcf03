import { createServer, connect, type AddressInfo, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pino } from "pino";
import { Registry } from "prom-client";
import { ax, axLogger, Client, type Runtime } from "ax-scheduler";
import { openStore } from "@ax/store";
import { closeRedis, connectRedis, QueueRegistry } from "@ax/coordinator";
import { startServer } from "@ax/server";
import { startMetricsServer } from "@ax/server/metrics";
import { isolate } from "../helpers/isolated.js";
import { captured } from "../helpers/log-capture.js";
import { testRuntime } from "../helpers/runtime.js";
import { tokenBeforeStart } from "../helpers/tokens.js";
import { freePort, startAx, type Child } from "../helpers/processes.js";

/** A TCP proxy to `target`'s host and port; `close()` cuts every connection and refuses new ones, as a dead server would. */
async function tcpProxy(target: string): Promise<{ via(url: string): string; close(): Promise<void> }> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(Number(port), hostname);
    for (const [a, b] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      sockets.add(a);
      a.pipe(b);
      a.on("error", () => b.destroy());
      a.on("close", () => {
        sockets.delete(a);
        b.destroy();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address() as AddressInfo;
  return {
    via(url) {
      const parsed = new URL(url);
      parsed.hostname = "127.0.0.1";
      parsed.port = String(address.port);
      return parsed.toString();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

async function get(url: string, token?: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(url, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const silent = pino({ level: "silent" });
const readyTask = ax.task({ name: "readyz_noop" }, () => null);
const readyFlow = ax.flow({ name: "readyz_flow" }, () => {
  readyTask();
});
const INSECURE = /without authentication.*every route.*use tokens in production/;

describe("/readyz: PostgreSQL and Redis answer; /healthz: the process answers", { timeout: 120_000 }, () => {
  const env = isolate("readyz");
  let token: string;

  /** A store and a Redis connection, each through its own proxy, so a test can make either unreachable. */
  async function proxied() {
    const pgProxy = await tcpProxy(env.storage);
    const redisProxy = await tcpProxy(env.redis);
    const store = openStore({ url: pgProxy.via(env.storage) });
    const redis = connectRedis(redisProxy.via(env.redis), silent);
    const queues = new QueueRegistry(redis, env.prefix, silent);
    return {
      pgProxy,
      redisProxy,
      store,
      redis,
      queues,
      async close() {
        await queues.close();
        closeRedis(redis);
        await store.close(1000);
        await pgProxy.close();
        await redisProxy.close();
      },
    };
  }

  beforeAll(async () => {
    token = await tokenBeforeStart(env, "readyz_reader");
  });

  afterAll(async () => {
    await env.cleanup();
  });

  it("API port: public like /healthz (no token), 200 while both answer, 503 naming PostgreSQL once it is unreachable", async () => {
    const deps = await proxied();
    const server = await startServer({ db: deps.store.db, queues: deps.queues, registry: new Registry(), log: silent, port: 0 });
    try {
      // Auth is on (a token is stored): the API refuses an anonymous caller, the probes do not.
      expect((await get(`${server.url}/api/flows`)).status).toBe(401);
      expect((await get(`${server.url}/api/flows`, token)).status).toBe(200);
      expect(await get(`${server.url}/healthz`)).toEqual({ status: 200, body: { ok: true } });
      expect(await get(`${server.url}/readyz`)).toEqual({ status: 200, body: { ok: true } });

      await deps.pgProxy.close();
      const started = Date.now();
      const down = await get(`${server.url}/readyz`);
      expect(Date.now() - started, "answers within the check's 2 s timeout").toBeLessThan(3500);
      expect(down.status).toBe(503);
      expect(down.body).toMatchObject({ ok: false, redis: "ok" });
      expect(down.body.postgres).toEqual(expect.any(String));
      expect(down.body.postgres).not.toBe("ok");
      expect(String(down.body.postgres)).not.toMatch(/\n/);
      // Liveness does not depend on PostgreSQL: restarting the process would not bring it back.
      expect(await get(`${server.url}/healthz`)).toEqual({ status: 200, body: { ok: true } });
    } finally {
      await server.close();
      await deps.close();
    }
  });

  it("API port: 503 naming Redis once Redis is unreachable", async () => {
    const deps = await proxied();
    const server = await startServer({ db: deps.store.db, queues: deps.queues, registry: new Registry(), log: silent, port: 0 });
    try {
      expect((await get(`${server.url}/readyz`)).status).toBe(200);
      await deps.redisProxy.close();
      const down = await get(`${server.url}/readyz`);
      expect(down.status).toBe(503);
      expect(down.body).toMatchObject({ ok: false, postgres: "ok" });
      expect(down.body.redis).toEqual(expect.any(String));
      expect(down.body.redis).not.toBe("ok");
    } finally {
      await server.close();
      await deps.close();
    }
  });

  it("metrics port (workers, coordinators): /readyz checks the connections it is given, beside /healthz and /metrics", async () => {
    const deps = await proxied();
    const metrics = await startMetricsServer(new Registry(), 0, "127.0.0.1", { db: deps.store.db, redis: deps.redis });
    try {
      expect(await get(`${metrics.url}/healthz`)).toEqual({ status: 200, body: { ok: true } });
      expect(await get(`${metrics.url}/readyz`)).toEqual({ status: 200, body: { ok: true } });
      expect((await fetch(`${metrics.url}/metrics`)).status).toBe(200);

      await deps.pgProxy.close();
      const down = await get(`${metrics.url}/readyz`);
      expect(down.status).toBe(503);
      expect(down.body).toMatchObject({ ok: false, redis: "ok" });
      expect(down.body.postgres).not.toBe("ok");
      expect(await get(`${metrics.url}/healthz`)).toEqual({ status: 200, body: { ok: true } });
    } finally {
      await metrics.close();
      await deps.close();
    }
  });

  it("a Runtime's metricsPort (ax worker, ax coordinator): /readyz is 503 once PostgreSQL is unreachable", async () => {
    const pgProxy = await tcpProxy(env.storage);
    const port = await freePort();
    const runtime = testRuntime(
      { ...env, storage: pgProxy.via(env.storage) },
      { flows: [readyFlow], roles: ["worker"], metricsPort: port, host: "127.0.0.1" },
    );
    await runtime.start();
    try {
      expect(await get(`http://127.0.0.1:${port}/readyz`)).toEqual({ status: 200, body: { ok: true } });
      await pgProxy.close();
      const down = await get(`http://127.0.0.1:${port}/readyz`);
      expect(down.status).toBe(503);
      expect(down.body).toMatchObject({ ok: false, redis: "ok" });
      expect(await get(`http://127.0.0.1:${port}/healthz`)).toEqual({ status: 200, body: { ok: true } });
    } finally {
      await runtime.stop({ timeout: 1 });
    }
  });

  it("metrics port given no connections: /readyz answers as /healthz", async () => {
    const metrics = await startMetricsServer(new Registry(), 0, "127.0.0.1");
    try {
      expect(await get(`${metrics.url}/readyz`)).toEqual({ status: 200, body: { ok: true } });
    } finally {
      await metrics.close();
    }
  });
});

describe("an API without authentication says so at start", { timeout: 120_000 }, () => {
  const env = isolate("insecure");
  const noop = ax.task({ name: "insecure_noop" }, () => null);
  const flow = ax.flow({ name: "insecure_flow" }, () => {
    noop();
  });
  let runtime: Runtime | undefined;
  let server: Child | undefined;

  afterAll(async () => {
    await runtime?.stop({ timeout: 2 });
    await server?.stop();
    await env.cleanup();
  });

  it("a Runtime API with insecureNoAuth logs a warning; its /readyz answers", async () => {
    const log = captured();
    runtime = testRuntime(env, { flows: [flow], roles: ["api"], port: 0, logger: axLogger({ level: "info" }, log.stream) });
    await runtime.start();
    const warnings = log.lines.map((line) => JSON.parse(line) as { level: number; msg: string }).filter((l) => INSECURE.test(l.msg));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.level).toBe(40);
    expect(await get(`${runtime.url}/readyz`)).toEqual({ status: 200, body: { ok: true } });
  });

  it("ax server --insecure-no-auth logs it too, and is listed as an API process though it has no entry", async () => {
    const port = await freePort();
    server = startAx(
      ["server", "--storage", env.storage, "--redis", env.redis, "--prefix", env.prefix, "--port", String(port), "--insecure-no-auth"],
      { AX_LOG_LEVEL: "info" },
    );
    await server.waitFor(/ax server started/, 90_000);
    const line = server
      .output()
      .split("\n")
      .find((l) => INSECURE.test(l));
    expect(line, server.output()).toBeDefined();
    expect(JSON.parse(line!).level).toBe(40);
    expect(await get(`http://127.0.0.1:${port}/readyz`)).toEqual({ status: 200, body: { ok: true } });
    // Not a Runtime, yet one of the cluster's processes: `ax config show --cluster` lists it.
    const client = new Client({ storage: env.storage, redis: env.redis, prefix: env.prefix });
    try {
      const listed = (await client.config.cluster()).find((p) => p.pid === server!.process.pid);
      expect(listed).toMatchObject({ roles: ["api"], queues: [], concurrency: null, live: true });
    } finally {
      await client.close();
    }
  });
});
