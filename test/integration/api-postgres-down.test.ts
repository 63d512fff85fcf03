import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { startPrivatePostgres, type PrivatePostgres } from "../helpers/private-postgres.js";
import { testRuntime } from "../helpers/runtime.js";

const step = ax.task({ name: "pgdown_step" }, () => null);
const flow = ax.flow({ name: "pgdown_flow" }, () => {
  step();
});

/** The HTTP API while its PostgreSQL is stopped: 503 naming it (a retry later passes), not a 500 with a stack in the log. */
describe("the HTTP API with PostgreSQL down", () => {
  const env = isolate("apipgdown");
  let server: PrivatePostgres;
  let runtime: Runtime;

  beforeAll(async () => {
    server = await startPrivatePostgres();
    runtime = testRuntime({ ...env, storage: server.url }, { flows: [flow], roles: ["coordinator", "api"], port: 0, logLevel: "fatal" });
    await runtime.start();
    await runtime.client().triggerFlow("pgdown_flow", null);
  }, 90_000);

  afterAll(async () => {
    await runtime?.stop({ timeout: 1 });
    await server?.destroy();
    await env.cleanup();
  });

  it("answers 503 AxStoreError on reads and triggers, and /metrics without the PostgreSQL gauges", { timeout: 60_000 }, async () => {
    const before = await (await fetch(`${runtime.url}/metrics`)).text();
    expect(before).toMatch(/^ax_runs\{flow="pgdown_flow",status="pending"\} 1$/m);
    await server.stop("fast");

    const calls: [string, RequestInit?][] = [
      ["/api/runs"],
      ["/api/flows"],
      ["/api/schedules"],
      ["/api/flows/pgdown_flow/runs", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }],
    ];
    for (const [path, init] of calls) {
      const response = await fetch(`${runtime.url}${path}`, { ...init, signal: AbortSignal.timeout(20_000) });
      const body = (await response.json()) as { error: string; message: string };
      expect({ path, status: response.status, error: body.error }).toEqual({ path, status: 503, error: "AxStoreError" });
      expect(body.message).toMatch(/^could not reach PostgreSQL/);
    }

    const metrics = await fetch(`${runtime.url}/metrics`, { signal: AbortSignal.timeout(20_000) });
    const text = await metrics.text();
    expect(metrics.status).toBe(200);
    expect(text).toMatch(/^process_resident_memory_bytes \d+/m);
    expect(text).not.toMatch(/^ax_runs\{/m);

    const ready = await fetch(`${runtime.url}/readyz`);
    expect(ready.status).toBe(503);
  });
});
