import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { freePort, runAx, startAx, type Child } from "../helpers/processes.js";
import { testRuntime } from "../helpers/runtime.js";

let release: () => void = () => {};
const released = new Promise<void>((resolve) => {
  release = resolve;
});
let started: () => void = () => {};
const running = new Promise<void>((resolve) => {
  started = resolve;
});
const hang = ax.task({ name: "stuck_metric_hang" }, async () => {
  started();
  await Promise.race([released, new Promise((resolve) => setTimeout(resolve, 120_000))]);
  return "done";
});
const stuckFlow = ax.flow({ name: "stuck_metric_flow" }, () => {
  hang();
});

const STUCK_ONE = /^ax_runs_stuck\{flow="stuck_metric_flow"\} 1$/m;

async function metrics(url: string): Promise<string> {
  return (await fetch(`${url}/metrics`)).text();
}

describe("ax_runs_stuck's threshold", { timeout: 120_000 }, () => {
  const env = isolate("stuckmetric");
  const connection = ["--storage", env.storage, "--redis", env.redis, "--prefix", env.prefix];
  let runtime: Runtime;
  let defaults: Runtime;
  let server: Child | undefined;

  beforeAll(async () => {
    runtime = testRuntime(env, {
      flows: [stuckFlow],
      roles: ["coordinator", "worker", "api"],
      port: 0,
      metricsAuth: false,
      metrics: { stuckAfterMs: 300 },
    });
    await runtime.start();
    defaults = testRuntime(env, { flows: [stuckFlow], roles: ["api"], port: 0, metricsAuth: false });
    await defaults.start();
    await runtime.client().triggerFlow("stuck_metric_flow", null);
    await running;
    // Past both thresholds below (300 ms, 500 ms), far short of the default hour.
    await new Promise((resolve) => setTimeout(resolve, 700));
  });

  afterAll(async () => {
    release();
    await server?.stop();
    await defaults?.stop({ timeout: 1 });
    await runtime?.stop({ timeout: 2 });
    await env.cleanup();
  });

  it("is Runtime's metrics.stuckAfterMs: a run running longer counts, one hour by default", async () => {
    expect(await metrics(runtime.url!)).toMatch(STUCK_ONE);
    // Not stuck by the default hour: a 0, not a missing series.
    expect(await metrics(defaults.url!)).toMatch(/^ax_runs_stuck\{flow="stuck_metric_flow"\} 0$/m);
  });

  it("is ax server's --stuck-after, and a value that is not a duration is refused", async () => {
    const port = await freePort();
    server = startAx(
      ["server", ...connection, "--port", String(port), "--insecure-no-auth", "--public-metrics", "--stuck-after", "500ms"],
      {
        AX_LOG_LEVEL: "info",
      },
    );
    await server.waitFor(/ax server started/, 90_000);
    expect(await metrics(`http://127.0.0.1:${port}`)).toMatch(STUCK_ONE);

    const refused = await runAx(["server", ...connection, "--port", "0", "--insecure-no-auth", "--stuck-after", "soon"]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("--stuck-after");
    expect(refused.stderr).toContain('"soon" is not a duration');
  });
});
