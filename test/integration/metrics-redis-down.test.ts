import { describe, expect, it } from "vitest";
import { ax } from "ax-scheduler";
import { runtimeOnPrivateRedis } from "../helpers/private-redis-runtime.js";

const step = ax.task({ name: "metrics_down_step" }, () => null);
const flow = ax.flow({ name: "metrics_down_flow" }, () => {
  step();
});

/** A scrape while Redis is unreachable: the gauges read from Redis are left out, not the whole answer. */
describe("/metrics with Redis down", () => {
  const { runtime, redisDown } = runtimeOnPrivateRedis(
    "metricsdown",
    { flows: [flow], roles: ["coordinator", "api"], port: 0, logLevel: "fatal" },
    1,
  );

  it("answers 200 with the PostgreSQL gauges and the process metrics, without ax_queue_jobs", { timeout: 60_000 }, async () => {
    await runtime().client().triggerFlow("metrics_down_flow", null);
    const before = await (await fetch(`${runtime().url}/metrics`)).text();
    expect(before).toMatch(/^ax_queue_jobs\{queue="default\.metrics_down_step",state="waiting"\} 1$/m);
    await redisDown();
    const started = Date.now();
    const response = await fetch(`${runtime().url}/metrics`, { signal: AbortSignal.timeout(20_000) });
    const text = await response.text();
    expect(response.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(text).toMatch(/^ax_runs\{flow="metrics_down_flow",status="pending"\} 1$/m);
    expect(text).toMatch(/^process_resident_memory_bytes \d+/m);
    expect(text).not.toMatch(/^ax_queue_jobs\{/m);
  });
});
