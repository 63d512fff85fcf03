import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Client, RunInfo, Runtime } from "ax-scheduler";
import { EXECUTORS, errorClassFlows } from "../fixtures/error-class-tasks.js";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

const attempts = (run: RunInfo) => run.tasks[0]!.attempts.map((a) => [a.outcome, a.error?.name ?? null]);

describe("retryOn and noRetryOn by error class, on every executor", () => {
  const env = isolate("errclass");
  let runtime: Runtime;
  let client: Client;

  const run = async (flow: string) => client.waitForRun(await client.triggerFlow(flow, null), { timeout: "50s" });

  beforeAll(async () => {
    runtime = testRuntime(env, { flows: errorClassFlows, maxConcurrency: 4 });
    await runtime.start();
    client = runtime.client();
  });

  afterAll(async () => {
    await runtime?.stop();
    await env.cleanup();
  });

  for (const executor of EXECUTORS) {
    it(`${executor}: a plain subclass is matched by its class and its ancestors, and recorded by its class name`, async () => {
      const [misconfigured, parentListed, flaky, notListed] = await Promise.all([
        run(`misconfigured_${executor}`),
        run(`parent_listed_${executor}`),
        run(`flaky_${executor}`),
        run(`not_listed_${executor}`),
      ]);
      expect(misconfigured.status).toBe("failed");
      expect(attempts(misconfigured)).toEqual([["failed", "ConfigError"]]);
      expect(misconfigured.tasks[0]!.attempts[0]!.error?.message).toBe("missing setting INVOICE_TEMPLATE");
      expect(attempts(parentListed)).toEqual([["failed", "ConfigError"]]);
      expect(flaky.status).toBe("success");
      expect(attempts(flaky)).toEqual([
        ["failed", "UpstreamTimeout"],
        ["failed", "UpstreamTimeout"],
        ["success", null],
      ]);
      expect(attempts(notListed)).toEqual([["failed", "ConfigError"]]);
    });

    it(`${executor}: a wrapped error is recorded with its cause's words`, async () => {
      const wrapped = await run(`wrapped_${executor}`);
      expect(attempts(wrapped)).toEqual([["failed", "UpstreamError"]]);
      expect(wrapped.tasks[0]!.attempts[0]!.error?.message).toBe("invoice call failed [cause: TypeError: fetch failed]");
    });
  }
});
