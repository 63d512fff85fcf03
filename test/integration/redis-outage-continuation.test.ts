import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { ax } from "ax-scheduler";
import { runtimeOnPrivateRedis } from "../helpers/private-redis-runtime.js";

/** Each execution of a task function, in order: what ran, whatever PostgreSQL later says of it. */
const executions: string[] = [];

const first = ax.task({ name: "outage_first" }, async (x: number) => {
  await sleep(800);
  return x;
});
const continued = ax.task({ name: "outage_continued", retries: 3 }, async (x: number) => {
  executions.push(`outage_continued#${ax.context().attempt}`);
  await sleep(500);
  return x + 1;
});
const sibling = ax.task({ name: "outage_sibling" }, (x: number) => x + 2);
const fork = ax.flow({ name: "outage_fork" }, (input) => {
  const s = first(input);
  continued(s);
  sibling(s);
});

describe("a Redis outage while a completion starts the next node in the same worker", () => {
  const { env, runtime, redisDown, redisBack } = runtimeOnPrivateRedis("outagecont", { flows: [fork], logLevel: "fatal" });

  it("runs the continued node once, after Redis is back, with no attempt closed as lost meanwhile", { timeout: 90_000 }, async () => {
    const client = runtime().client();
    const runId = await client.triggerFlow("outage_fork", 1);
    for (;;) {
      const [row] = await env.sql<{ n: number }>("select count(*)::int as n from attempts where run_id = $1", [runId]);
      if (row!.n > 0) break;
      await sleep(20);
    }
    // The first node completes while Redis is gone: its sibling's job cannot be added for a while.
    await redisDown();
    // Longer than the lost-outcome sweep's period (15 s) plus the age it allows a continuation (5 s).
    await sleep(22_000);
    await redisBack();
    const run = await client.waitForRun(runId, { timeout: "60s" });
    expect(run.status).toBe("success");
    const node = run.tasks.find((t) => t.key === "outage_continued")!;
    expect(node.attempts.map((a) => a.outcome)).toEqual(["success"]);
    expect(executions).toEqual(["outage_continued#1"]);
  });
});
