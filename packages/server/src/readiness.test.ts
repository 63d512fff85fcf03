import { describe, expect, it } from "vitest";
import { checkReadiness, type ReadinessDeps } from "./readiness.js";

const never = () => new Promise<never>(() => {});
const db = (execute: () => PromiseLike<unknown>): ReadinessDeps["db"] => ({ execute });
const redis = (ping: () => Promise<string>, status = "ready"): ReadinessDeps["redis"] => ({ status, ping });

describe("checkReadiness", () => {
  it("is ok when PostgreSQL and Redis both answer", async () => {
    const deps = { db: db(async () => ({ rows: [{ "?column?": 1 }] })), redis: redis(async () => "PONG") };
    expect(await checkReadiness(deps)).toEqual({ ok: true });
  });

  it("names the failing dependency and says ok for the other", async () => {
    const deps = {
      db: db(async () => {
        throw new Error("connect ECONNREFUSED 127.0.0.1:5432\n    at TCPConnectWrap.afterConnect");
      }),
      redis: redis(async () => "PONG"),
    };
    expect(await checkReadiness(deps)).toEqual({ ok: false, postgres: "connect ECONNREFUSED 127.0.0.1:5432", redis: "ok" });
  });

  it("a dependency that does not answer fails after the timeout, without waiting for it", async () => {
    const started = Date.now();
    const answer = await checkReadiness({ db: db(never), redis: redis(never), timeoutMs: 50 });
    expect(answer).toEqual({ ok: false, postgres: "no answer within 50 ms", redis: "no answer within 50 ms" });
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it("a Redis connection that is reconnecting fails at once, without queueing a PING", async () => {
    let pinged = false;
    const answer = await checkReadiness({
      db: db(async () => ({})),
      redis: redis(async () => {
        pinged = true;
        return "PONG";
      }, "reconnecting"),
    });
    expect(answer).toEqual({ ok: false, postgres: "ok", redis: "the Redis connection is reconnecting" });
    expect(pinged).toBe(false);
  });

  it("a check that throws synchronously is a failure, not an exception", async () => {
    const answer = await checkReadiness({
      db: {
        execute: () => {
          throw new Error("pool is closed");
        },
      },
      redis: redis(async () => "PONG"),
    });
    expect(answer).toEqual({ ok: false, postgres: "pool is closed", redis: "ok" });
  });
});
