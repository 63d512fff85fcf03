import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { startPrivatePostgres, type PrivatePostgres } from "../helpers/private-postgres.js";
import { testRuntime } from "../helpers/runtime.js";
import { tokenBeforeStart } from "../helpers/tokens.js";

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

/**
 * With token auth, the token check needs PostgreSQL: a scraper whose token `/metrics` let in lately
 * goes on being served through the outage; other routes, and tokens not seen before, are not.
 */
describe("an authenticated /metrics with PostgreSQL down", () => {
  const env = isolate("apipgdownauth");
  let server: PrivatePostgres;
  let runtime: Runtime;
  let scraper: string;
  let stranger: string;

  beforeAll(async () => {
    server = await startPrivatePostgres();
    scraper = await tokenBeforeStart({ ...env, storage: server.url }, "scraper");
    stranger = await tokenBeforeStart({ ...env, storage: server.url }, "stranger");
    runtime = testRuntime(
      { ...env, storage: server.url },
      { flows: [flow], roles: ["coordinator", "api"], port: 0, insecureNoAuth: false, logLevel: "fatal" },
    );
    await runtime.start();
  }, 90_000);

  afterAll(async () => {
    await runtime?.stop({ timeout: 1 });
    await server?.destroy();
    await env.cleanup();
  });

  const get = (path: string, token: string) =>
    fetch(`${runtime.url}${path}`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(20_000) });

  it("serves the scraper's /metrics, without the PostgreSQL gauges; 503 for the rest", { timeout: 60_000 }, async () => {
    expect((await get("/metrics", scraper)).status).toBe(200);
    await server.stop("fast");

    const metrics = await get("/metrics", scraper);
    const text = await metrics.text();
    expect(metrics.status).toBe(200);
    expect(text).toMatch(/^process_resident_memory_bytes \d+/m);
    expect(text).not.toMatch(/^ax_runs\{/m);

    expect((await get("/metrics", stranger)).status).toBe(503);
    expect((await get("/api/runs", scraper)).status).toBe(503);
    expect((await get("/metrics", "ax_not_a_token")).status).toBe(401);
  });
});
