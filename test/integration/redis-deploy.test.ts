import { randomBytes } from "node:crypto";
import { rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { Redis } from "ioredis";
import pino from "pino";
import { Registry } from "prom-client";
import { afterAll, describe, expect, it, vi } from "vitest";
import { AxRedisVersionError } from "@ax/common";
import { checkEvictionPolicy, checkRedisVersion, closeRedis, connectRedis, redisConnectionOptions } from "@ax/coordinator";
import { startMetricsServer } from "@ax/server";
import { ax } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { freePort, startChild, startPrivateRedis, type Child } from "../helpers/processes.js";
import { testRuntime } from "../helpers/runtime.js";

/** A pino logger whose JSON lines land in `lines`. */
function capturingLogger(): { log: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split("\n").filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { log: pino({ level: "info" }, stream), lines };
}

const greet = ax.task({ name: "deploy_greet" }, (name: string) => `hello ${name}`);
const measure = ax.task({ name: "deploy_measure" }, (text: string) => text.length);
const shout = ax.task({ name: "deploy_shout", concurrency: 1, rateLimit: { max: 100, per: "1m" } }, (text: string) => text.toUpperCase());
const deployFlow = ax.flow({ name: "deploy_flow" }, (name) => {
  const text = greet(name);
  return { length: measure(text), loud: shout(text) };
});

const redisServers: Child[] = [];
afterAll(async () => {
  await Promise.all(redisServers.map((child) => child.stop()));
});

async function privateRedis(args: string[]): Promise<{ url: string; port: number }> {
  const server = await startPrivateRedis(undefined, args);
  redisServers.push(server.child);
  return server;
}

describe("Redis's maxmemory-policy is checked at start", () => {
  it("an evicting Redis is logged at error, once, as JSON, and ax_redis_eviction_policy_ok is 0 in a started Runtime", async () => {
    const redis = await privateRedis(["--maxmemory-policy", "allkeys-lru"]);
    const env = isolate("evict");
    const { log, lines } = capturingLogger();
    const plainText = vi.spyOn(console, "warn");
    const runtime = testRuntime({ ...env, redis: redis.url }, { flows: [deployFlow], roles: ["worker"], logger: log });
    try {
      await runtime.start();
      const warnings = lines.filter((l) => l.policy === "allkeys-lru");
      expect(warnings).toHaveLength(1);
      expect(warnings[0]?.level).toBe(50);
      expect(String(warnings[0]?.msg)).toMatch(/silently delete queued jobs.*noeviction/);
      expect(await runtime.registry.getSingleMetricAsString("ax_redis_eviction_policy_ok")).toMatch(/^ax_redis_eviction_policy_ok 0$/m);
      // BullMQ's own check printed "IMPORTANT! Eviction policy is ..." once per queue, outside the JSON log.
      expect(plainText.mock.calls.filter((call) => /Eviction policy/.test(String(call[0])))).toEqual([]);
    } finally {
      plainText.mockRestore();
      await runtime.stop({ timeout: "2s" });
      await env.cleanup();
    }
  });

  it("noeviction sets the gauge to 1 and logs nothing", async () => {
    const redis = await privateRedis(["--maxmemory-policy", "noeviction"]);
    const connection = new Redis(redis.url);
    const { log, lines } = capturingLogger();
    const registry = new Registry();
    try {
      expect(await checkEvictionPolicy(connection, log, registry)).toEqual({ policy: "noeviction", ok: true });
      expect(await registry.getSingleMetricAsString("ax_redis_eviction_policy_ok")).toMatch(/^ax_redis_eviction_policy_ok 1$/m);
      expect(lines).toEqual([]);
    } finally {
      connection.disconnect();
    }
  });

  it("a Redis that refuses CONFIG (managed services) is tolerated: a warning, no gauge", async () => {
    const redis = await privateRedis(["--maxmemory-policy", "volatile-lru"]);
    const admin = new Redis(redis.url);
    await admin.call("ACL", "SETUSER", "app", "on", ">app-pass", "~*", "&*", "+@all", "-config");
    const connection = new Redis(redis.url.replace("redis://", "redis://app:app-pass@"));
    const { log, lines } = capturingLogger();
    const registry = new Registry();
    try {
      const check = await checkEvictionPolicy(connection, log, registry);
      expect(check).toMatchObject({ policy: null, ok: null });
      expect(lines).toHaveLength(1);
      expect(lines[0]?.level).toBe(40);
      expect(String(lines[0]?.msg)).toMatch(/NOPERM.*noeviction/);
      expect(registry.getSingleMetric("ax_redis_eviction_policy_ok")).toBeUndefined();
    } finally {
      connection.disconnect();
      admin.disconnect();
    }
  });
});

describe("Redis's version is checked once at start", () => {
  it("answers the server's version and logs nothing for a current Redis", async () => {
    const redis = await privateRedis([]);
    const connection = new Redis(redis.url);
    const { log, lines } = capturingLogger();
    try {
      expect(await checkRedisVersion(connection, log)).toMatch(/^\d+\.\d+\.\d+$/);
      expect(lines).toEqual([]);
    } finally {
      connection.disconnect();
    }
  });

  it("says every so often that a start waits for a Redis that does not answer, and goes on once it does", async () => {
    const port = await freePort();
    const connection = connectRedis(`redis://127.0.0.1:${port}`, pino({ level: "silent" }));
    const { log, lines } = capturingLogger();
    try {
      const checked = checkRedisVersion(connection, log, 100);
      const waiting = () => lines.filter((l) => String(l.msg).startsWith("still waiting for Redis to answer before starting"));
      await vi.waitFor(() => expect(waiting().length).toBeGreaterThanOrEqual(2), { timeout: 10_000 });
      expect(waiting()[0]).toMatchObject({ level: 40, redis: `127.0.0.1:${port}` });
      expect(String(waiting()[0]!.msg)).toContain("--redis / REDIS_URL");
      const server = await startPrivateRedis(port);
      redisServers.push(server.child);
      expect(await checked).toMatch(/^\d+\.\d+\.\d+$/);
      const said = waiting().length;
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(waiting()).toHaveLength(said);
    } finally {
      closeRedis(connection);
    }
  });

  it("refuses a server older than 5.0 and warns below 6.2 (a stand-in answers INFO: no such server is installed here)", async () => {
    const { log, lines } = capturingLogger();
    const server = (version: string) =>
      ({ info: async () => `# Server\r\nredis_version:${version}\r\nredis_mode:standalone\r\n` }) as unknown as Redis;
    await expect(checkRedisVersion(server("4.0.14"), log)).rejects.toBeInstanceOf(AxRedisVersionError);
    await expect(checkRedisVersion(server("4.0.14"), log)).rejects.toThrow("Redis 4.0.14 is too old: ax needs Redis 5.0.0 or newer");
    expect(await checkRedisVersion(server("6.0.16"), log)).toBe("6.0.16");
    expect(lines.map((l) => l.msg)).toEqual(["Redis 6.0.16 is older than 6.2.0; it works, but upgrade when you can"]);
    expect(await checkRedisVersion(server("10.0.0"), log)).toBe("10.0.0");
    expect(lines).toHaveLength(1);
  });
});

describe("the metrics port answers container probes", () => {
  it("GET /healthz is 200 beside /metrics", async () => {
    const server = await startMetricsServer(new Registry(), 0, "127.0.0.1");
    try {
      const health = await fetch(`${server.url}/healthz`);
      expect(health.status).toBe(200);
      expect(await health.json()).toEqual({ ok: true });
      expect((await fetch(`${server.url}/metrics`)).status).toBe(200);
      expect((await fetch(`${server.url}/nope`)).status).toBe(404);
    } finally {
      await server.close();
    }
  });
});

describe("a key prefix with a hash tag keeps every key in one Redis Cluster slot", () => {
  it("a full run (limit gate included) on a cluster-mode Redis that refuses cross-slot commands", async () => {
    // One cluster-mode node owning every slot: it enforces CROSSSLOT on multi-key commands and
    // on scripts touching keys of several slots, as each node of a real Cluster does.
    const nodesFile = join(tmpdir(), `ax-nodes-${randomBytes(4).toString("hex")}.conf`);
    const redis = await privateRedis(["--cluster-enabled", "yes", "--cluster-config-file", nodesFile]);
    const admin = new Redis(redis.url);
    const env = isolate("slot");
    const prefix = `{${env.prefix}}`;
    const runtime = testRuntime({ ...env, redis: redis.url, prefix }, { flows: [deployFlow] });
    try {
      await admin.call("CLUSTER", "ADDSLOTSRANGE", "0", "16383");
      await expect.poll(async () => String(await admin.call("CLUSTER", "INFO")), { timeout: 10_000 }).toMatch(/cluster_state:ok/);
      await expect(admin.mset("a", "1", "b", "2")).rejects.toThrow(/CROSSSLOT/);

      await runtime.start();
      const client = runtime.client();
      const runs = await Promise.all(["ada", "bob", "cy"].map((name) => client.triggerFlow("deploy_flow", name)));
      for (const id of runs) {
        const run = await client.waitForRun(id, { timeout: "30s" });
        expect(run.status).toBe("success");
      }

      const keys = await admin.keys("*");
      expect(keys.length).toBeGreaterThan(0);
      expect(keys.filter((key) => !key.startsWith(`${prefix}:`))).toEqual([]);
      // The limit gate's rate window (its semaphore is gone once released), the event stream and BullMQ's queues are all there.
      expect(keys.some((key) => key.includes(":limits:"))).toBe(true);
      expect(keys.some((key) => key.endsWith(":ax:events"))).toBe(true);
      const slots = new Set(await Promise.all(keys.map(async (key) => Number(await admin.call("CLUSTER", "KEYSLOT", key)))));
      expect(slots).toEqual(new Set([Number(await admin.call("CLUSTER", "KEYSLOT", prefix))]));
    } finally {
      await runtime.stop({ timeout: "2s" });
      admin.disconnect();
      await env.cleanup();
      rmSync(nodesFile, { force: true });
    }
  });
});

describe("Redis behind Sentinel", () => {
  it("a redis+sentinel:// URL naming only the Sentinels runs a flow on the master they point at", async () => {
    const master = await privateRedis([]);
    const sentinelPort = await freePort();
    const sentinelConf = join(tmpdir(), `ax-sentinel-${randomBytes(4).toString("hex")}.conf`);
    // Sentinel rewrites its config file, so it must be a writable file of its own.
    writeFileSync(sentinelConf, `port ${sentinelPort}\nbind 127.0.0.1\nsentinel monitor axmaster 127.0.0.1 ${master.port} 1\n`);
    const sentinel = startChild("redis-server", [sentinelConf, "--sentinel"]);
    redisServers.push(sentinel);
    await sentinel.waitFor(/monitor master axmaster/, 10_000);
    const env = isolate("sentinel");
    const runtime = testRuntime({ ...env, redis: `redis+sentinel://127.0.0.1:${sentinelPort}/axmaster` }, { flows: [deployFlow] });
    const direct = new Redis(master.url);
    try {
      await runtime.start();
      const client = runtime.client();
      const run = await client.waitForRun(await client.triggerFlow("deploy_flow", "sam"), { timeout: "30s" });
      expect(run.status).toBe("success");
      expect((await direct.keys(`${env.prefix}:*`)).length).toBeGreaterThan(0);
    } finally {
      await runtime.stop({ timeout: "2s" });
      direct.disconnect();
      await env.cleanup();
      rmSync(sentinelConf, { force: true });
    }
  });

  it("a malformed Sentinel URL is refused with the form to write", () => {
    expect(() => redisConnectionOptions("redis+sentinel://:secret@host-only")).toThrow(
      /redis\+sentinel:\/\/\[user:password@\]host:26379.*<master name>/,
    );
    expect(() => redisConnectionOptions("redis+sentinel://:secret@host-only")).not.toThrow(/secret/);
    expect(redisConnectionOptions("redis+sentinel://app:p%40ss@s1:26379,s2:26380/main/2")).toEqual({
      sentinels: [
        { host: "s1", port: 26379 },
        { host: "s2", port: 26380 },
      ],
      name: "main",
      username: "app",
      password: "p@ss",
      db: 2,
    });
  });
});
