import { execFile } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import pino from "pino";
import { closeRedis, connectRedis, QueueRegistry } from "@ax/coordinator";
import { openQueue } from "../../packages/worker/src/dispatch/queue-state.js";
import { RepeatedErrors } from "@ax/coordinator";
import { freePort } from "../helpers/processes.js";
import { REDIS_URL } from "../helpers/isolated.js";

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

/**
 * A command that never needed Redis closes its connection while ioredis's ready check is still in
 * flight. The check then fails, and ioredis disconnects the closed socket again behind a timer
 * nothing clears: at ioredis's default of 2 s, `ax runs` and `ax queues` lingered 2 s after
 * printing their answer.
 */
describe("closing a connection whose ready check is in flight", () => {
  it("lets the process end at once", async () => {
    const script = `
      import { closeRedis, connectRedis } from "@ax/coordinator";
      import pino from "pino";
      const redis = connectRedis(process.argv[1], pino({ level: "silent" }));
      let closedAt = 0;
      redis.once("connect", () => { closedAt = performance.now(); closeRedis(redis); });
      process.on("exit", () => console.log(JSON.stringify({ status: redis.status, lingerMs: performance.now() - closedAt })));
    `;
    const cwd = fileURLToPath(new URL("..", import.meta.url));
    const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", script, REDIS_URL], { cwd });
    const { status, lingerMs } = JSON.parse(stdout) as { status: string; lingerMs: number };
    expect(status).toBe("end");
    // 2,000 ms when the timer kept the process; 50 ms now, with room for a busy machine.
    expect(lingerMs).toBeLessThan(1500);
  });
});
