import { createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { freePort, runAx } from "../helpers/processes.js";
import { testRuntime } from "../helpers/runtime.js";

const idle = ax.task({ name: "redis_down_task" }, () => "done");
const idleFlow = ax.flow({ name: "redis_down_flow" }, () => {
  idle();
});

/** Commands that cannot finish without Redis, run with Redis unreachable: they say so instead of hanging. */
describe("ax commands that need Redis, with Redis unreachable", { timeout: 120_000 }, () => {
  const env = isolate("redisdown");
  let runId: string;
  let down: string[];

  beforeAll(async () => {
    // A queued node, so that the task has a queue to count; no worker takes it.
    const runtime = testRuntime(env, { flows: [idleFlow], roles: ["coordinator"] });
    await runtime.start();
    runId = await runtime.client().triggerFlow("redis_down_flow", null);
    await runtime.stop();
    down = ["--storage", env.storage, "--prefix", env.prefix, "--redis", `redis://127.0.0.1:${await freePort()}`];
  });

  afterAll(async () => {
    await env.cleanup();
  });

  it("ax queues fails after 5 s with AxRedisUnreachableError and one plain warning line", async () => {
    const started = Date.now();
    const result = await runAx(["queues", ...down], { AX_LOG_LEVEL: "" });
    const tookMs = Date.now() - started;
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("AxRedisUnreachableError: Redis did not answer within 5 s, so listing the queues could not finish");
    expect(result.stderr).toMatch(/Its connection fails with: connect ECONNREFUSED 127\.0\.0\.1:\d+\. Check that Redis is running/);
    expect(result.stderr).toContain("--redis / REDIS_URL");
    // The connection's warning is one plain line, not a JSON record with a stack.
    expect(result.stderr).toMatch(/^ax: Redis connection failed; reconnecting \(connect ECONNREFUSED 127\.0\.0\.1:\d+\)$/m);
    expect(result.stderr).not.toContain('"level"');
    expect(tookMs).toBeLessThan(30_000);
  });

  it("ax cancel cancels in PostgreSQL, then says the Redis half did not happen and to cancel again", async () => {
    const result = await runAx(["cancel", runId, ...down]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      `AxRedisUnreachableError: Redis did not answer within 5 s, so cancelling run ${runId} could not finish`,
    );
    expect(result.stderr).toContain("the run is cancelled in PostgreSQL");
    expect(result.stderr).toContain("Cancel it again once Redis answers");
    const shown = await runAx(["run", runId, "--json", ...down]);
    expect(JSON.parse(shown.stdout)).toMatchObject({ id: runId, status: "cancelled" });
    // With Redis back (the shared one), cancelling again finishes the Redis half.
    const again = await runAx(["cancel", runId, "--storage", env.storage, "--prefix", env.prefix, "--redis", env.redis]);
    expect(again.code).toBe(0);
  });

  it("ax trigger writes the run in PostgreSQL and prints only its id on stdout; the warning is one plain line on stderr", async () => {
    const result = await runAx(["trigger", "redis_down_flow", ...down], { AX_LOG_LEVEL: "" });
    expect(result.code).toBe(0);
    // Captured as `RUN=$(ax trigger …)`, stdout must be the id alone.
    expect(result.stdout).toMatch(/^[0-9a-f-]{36}\n$/);
    expect(result.stderr).toMatch(/^ax: Redis did not answer in time; the jobs are added when it is back, or by the reconciler$/m);
    expect(result.stderr).not.toContain("did not reach Redis");
    expect(result.stderr).not.toContain('"level"');
    const shown = await runAx(["run", result.stdout.trim(), "--json", ...down]);
    expect(JSON.parse(shown.stdout)).toMatchObject({ id: result.stdout.trim(), flow: "redis_down_flow" });
  });

  it("ax trigger against a Redis that accepts connections and never answers (a hung server) warns once", async () => {
    const hung = createServer(() => {});
    await new Promise<void>((resolve) => hung.listen(0, "127.0.0.1", resolve));
    const port = (hung.address() as { port: number }).port;
    try {
      const result = await runAx(
        ["trigger", "redis_down_flow", "--storage", env.storage, "--prefix", env.prefix, "--redis", `redis://127.0.0.1:${port}`],
        {
          AX_LOG_LEVEL: "",
        },
      );
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/^[0-9a-f-]{36}\n$/);
      expect(result.stderr).toMatch(/^ax: Redis did not answer in time; the jobs are added when it is back, or by the reconciler$/m);
      expect(result.stderr).not.toContain("did not reach Redis");
    } finally {
      hung.close();
    }
  });
});
