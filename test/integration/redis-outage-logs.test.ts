import { setTimeout as sleep } from "node:timers/promises";
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import pino from "pino";
import { ax } from "ax-scheduler";
import { runtimeOnPrivateRedis } from "../helpers/private-redis-runtime.js";

const quiet = ax.task({ name: "outage_logs_task" }, () => "done");
const flow = ax.flow({ name: "outage_logs_flow" }, () => {
  quiet();
});

/** A Redis outage is reported once per connection, and its end once: not once per reconnect attempt or watchdog period. */
describe("the log of a worker while Redis is down for 18 s", () => {
  const lines: { msg?: string; connection?: string }[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString("utf8")) as { msg?: string; connection?: string });
      done();
    },
  });
  const { runtime, redisDown, redisBack } = runtimeOnPrivateRedis("outagelogs", { flows: [flow], logger: pino({ level: "info" }, stream) });

  it("says each connection failed once and came back once, and the worker still runs a run after", { timeout: 90_000 }, async () => {
    await sleep(500);
    const from = lines.length;
    await redisDown();
    // A run triggered meanwhile is written, and its node says what it waits for.
    const during = await runtime().client().triggerFlow("outage_logs_flow", null);
    expect((await runtime().client().getRun(during)).tasks[0]!.waitingFor).toBe(
      "Redis, which does not answer: a worker takes the job once it is back",
    );
    // Over two periods of the job-marker wait's watchdog (5 s block + 2 s).
    await sleep(18_000);
    await redisBack();
    const run = await runtime().client().triggerFlow("outage_logs_flow", null);
    expect((await runtime().client().waitForRun(run, { timeout: "30s" })).status).toBe("success");
    expect((await runtime().client().waitForRun(during, { timeout: "30s" })).status).toBe("success");
    const logged = lines.slice(from);
    const failed = logged.filter((l) => l.msg === "Redis connection failed; reconnecting").map((l) => l.connection);
    expect(failed.length).toBeGreaterThan(0);
    expect(new Set(failed).size).toBe(failed.length);
    expect(failed).toContain("job markers");
    expect(logged.filter((l) => l.msg?.includes("replacing that connection"))).toEqual([]);
    const back = logged.filter((l) => l.msg === "Redis connection is back").map((l) => l.connection);
    expect(new Set(back).size).toBe(back.length);
  });
});
