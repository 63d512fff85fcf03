import { once } from "node:events";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pino from "pino";
import { Redis } from "ioredis";
import { ax, axLogger } from "ax-scheduler";
import { AxRedisUnreachableError } from "@ax/common";
import { busyKeys, closeRedis, connectRedis, QueueRegistry } from "@ax/coordinator";
import { isolate } from "../helpers/isolated.js";
import { startPrivateRedis, type Child } from "../helpers/processes.js";
import { testRuntime } from "../helpers/runtime.js";

const authTask = ax.task({ name: "redis_auth_task" }, () => "done");
const authFlow = ax.flow({ name: "redis_auth_flow" }, () => {
  authTask();
});

/** Every line a logger writes, parsed. */
function capture(): { stream: Writable; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString("utf8")) as Record<string, unknown>);
      done();
    },
  });
  return { stream, lines };
}

/** A Redis password that is wrong (rotated, mistyped) must not reach the logs with the refused AUTH. */
describe("a Redis connection refused for its password", () => {
  let server: { url: string; port: number; child: Child };

  beforeAll(async () => {
    server = await startPrivateRedis(undefined, ["--requirepass", "the-right-one"]);
  }, 30_000);

  afterAll(async () => {
    await server?.child.stop();
  });

  it("is logged once, naming the AUTH command but not its arguments", async () => {
    const { stream, lines } = capture();
    const redis = connectRedis(`redis://ops:wr0ng-p4ss@127.0.0.1:${server.port}`, pino({ level: "warn" }, stream));
    try {
      await once(redis, "error");
      await new Promise((resolve) => setImmediate(resolve));
      const text = JSON.stringify(lines);
      expect(lines[0]).toMatchObject({ msg: "Redis connection failed; reconnecting", err: { command: { name: "auth" } } });
      expect(text).not.toContain("wr0ng-p4ss");
    } finally {
      closeRedis(redis);
    }
  });

  it("fails a call that needs Redis saying that the password is refused, without the password", async () => {
    const silent = pino({ level: "silent" });
    const redis = connectRedis(`redis://ops:wr0ng-p4ss@127.0.0.1:${server.port}`, silent);
    const queues = new QueueRegistry(redis, "ax_auth_refused", silent);
    try {
      const error = (await busyKeys(queues, "t").catch((e: unknown) => e)) as Error;
      expect(error).toBeInstanceOf(AxRedisUnreachableError);
      expect(error.message).toMatch(
        /^Redis refuses the user or password \(WRONGPASS invalid username-password pair or user is disabled\), so listing the busy keys could not finish\. Check them in --redis \/ REDIS_URL/,
      );
      expect(error.message).not.toContain("wr0ng-p4ss");
    } finally {
      await queues.close(500);
      closeRedis(redis);
    }
  });

  it("fails a Runtime's start at once, saying that the password is refused", async () => {
    const env = isolate("redisauth");
    try {
      const runtime = testRuntime(
        { ...env, redis: `redis://ops:wr0ng-p4ss@127.0.0.1:${server.port}` },
        { flows: [authFlow], logLevel: "silent" },
      );
      const error = (await runtime.start().catch((e: unknown) => e)) as Error;
      expect(error).toBeInstanceOf(AxRedisUnreachableError);
      // Which refusal is seen first depends on timing: AUTH's own (WRONGPASS), or another command's (NOAUTH).
      expect(error.message).toMatch(
        /^Redis refuses the user or password \((WRONGPASS|NOAUTH) .*\), so starting this process could not finish\./,
      );
      expect(error.message).not.toContain("wr0ng-p4ss");
    } finally {
      await env.cleanup();
    }
  });

  it("is censored by ax's logger when logged raw by other code", async () => {
    const raw = new Redis(`redis://ops:wr0ng-p4ss@127.0.0.1:${server.port}`, { retryStrategy: () => null });
    const [error] = (await once(raw, "error")) as [Error];
    raw.disconnect();
    expect(JSON.stringify((error as { command?: unknown }).command)).toContain("wr0ng-p4ss");
    const { stream, lines } = capture();
    axLogger({ level: "warn" }, stream).warn({ err: error }, "raw");
    expect(JSON.stringify(lines)).not.toContain("wr0ng-p4ss");
  });
});
