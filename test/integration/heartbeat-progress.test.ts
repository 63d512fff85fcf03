import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Client, Runtime } from "ax-scheduler";
import { EXECUTORS, progressFlows } from "./fixtures/heartbeat-progress-tasks.js";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

describe("heartbeat(progress) with progress it cannot store, on real Redis and PostgreSQL", () => {
  const env = isolate("hbprog");
  let runtime: Runtime;
  let client: Client;

  const run = async (flow: string, payload: { mode: string; uncaught?: boolean }) =>
    client.waitForRun(await client.triggerFlow(flow, payload), { timeout: "50s" });

  beforeAll(async () => {
    runtime = testRuntime(env, { flows: progressFlows, maxConcurrency: 4 });
    await runtime.start();
    client = runtime.client();
  });

  afterAll(async () => {
    await runtime?.stop();
    await env.cleanup();
  });

  for (const executor of EXECUTORS) {
    describe(executor, () => {
      it.each([
        ["bigint", /is not plain JSON: \$\.done is a BigInt/],
        ["nul", /cannot be stored in PostgreSQL: \$\.note contains a NUL character/],
        ["surrogate", /cannot be stored in PostgreSQL: \$\.note contains a lone UTF-16 surrogate/],
      ])("throws AxNotJsonError at the call for %s progress; the stored progress is the last storable one", async (mode, problem) => {
        const done = await run(`progress_${executor}`, { mode });
        expect(done.status).toBe("success");
        const result = done.tasks[0]!.result as { refused: string; message: string };
        expect(result.refused).toBe("AxNotJsonError");
        expect(result.message).toMatch(new RegExp(`^heartbeat progress of task "progress_${executor}" `));
        expect(result.message).toMatch(problem);
        expect(done.tasks[0]!.progress).toEqual({ step: 1 });
      });

      it("a refusal the task does not catch fails the attempt with it", async () => {
        const done = await run(`progress_${executor}`, { mode: "bigint", uncaught: true });
        expect(done.status).toBe("failed");
        expect(done.tasks[0]!.attempts.map((a) => [a.outcome, a.error?.name])).toEqual([["failed", "AxNotJsonError"]]);
        expect(done.tasks[0]!.attempts[0]!.error?.message).toMatch(/\$\.done is a BigInt/);
      });
    });
  }
});
