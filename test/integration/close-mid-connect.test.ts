import { once } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import pino from "pino";
import { closeRedis, connectRedis, QueueRegistry } from "@ax/coordinator";
import { openQueue } from "../../packages/worker/src/dispatch/queue-state.js";
import { RepeatedErrors } from "../../packages/worker/src/dispatch/repeated-errors.js";
import { freePort } from "../helpers/processes.js";

const log = pino({ level: "silent" });

/**
 * A producer or worker closed while Redis is down: ioredis keeps reconnecting, and closing it during
 * one of those connects ends the connection under BullMQ's own wait for "ready". That wait must not
 * reject with nobody listening, which would end the caller's process.
 */
describe("closing queues while their Redis connection is mid-connect to a server that is down", () => {
  const unhandled: unknown[] = [];
  const record = (reason: unknown) => unhandled.push(reason);
  beforeEach(() => {
    unhandled.length = 0;
    process.on("unhandledRejection", record);
  });
  afterEach(() => {
    process.off("unhandledRejection", record);
  });

  it("a producer's queue: the pending add fails as closed, nothing rejects unhandled", async () => {
    const redis = connectRedis(`redis://127.0.0.1:${await freePort()}`, log);
    const queues = new QueueRegistry(redis, "ax_close_mid_connect", log);
    const added = queues
      .get("default.t")
      .add("n", { runId: "r", nodeKey: "n", attempt: 1, flowVersionId: 1 })
      .then(
        () => "added",
        (err: Error) => err.message,
      );
    // A later reconnect, so the close lands inside a connect rather than between two.
    await once(redis, "error");
    await once(redis, "connecting");
    const closing = queues.close(500);
    closeRedis(redis);
    await closing;
    expect(await added).toMatch(/Connection is closed/);
    await sleep(200);
    expect(unhandled).toEqual([]);
  });

  it("a worker's queue: closing it and its connection leaves nothing unhandled", async () => {
    const redis = connectRedis(`redis://127.0.0.1:${await freePort()}`, log);
    const state = openQueue(
      { name: "default.t", task: "t" },
      {
        connection: redis,
        prefix: "ax_close_mid_connect",
        lockDurationMs: 30_000,
        stalledIntervalMs: 30_000,
        log,
        errors: new RepeatedErrors(log),
      },
    );
    await once(redis, "error");
    await once(redis, "connecting");
    const closing = state.worker.close(true);
    closeRedis(redis);
    await closing;
    await sleep(200);
    expect(unhandled).toEqual([]);
  });
});
