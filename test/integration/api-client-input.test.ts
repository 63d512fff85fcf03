import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";

const echo = ax.task({ name: "input_echo" }, (value: unknown) => value);
const flow = ax.flow({ name: "input_flow", businessKey: (payload: { key?: string }) => payload.key ?? "default" }, (input) => {
  echo(input);
});
/** Past Fastify's default of 100 characters a path segment: names have no limit of their own. */
const LONG_NAME = `nightly_${"warehouse_".repeat(15)}sync`;
const longNamed = ax.flow({ name: LONG_NAME }, (input) => {
  echo(input);
});

/** The caller's mistakes answer 400 with `{ error, message }`, never a 500 from PostgreSQL. */
describe("the HTTP API refuses client input it cannot store", () => {
  const env = isolate("apiinput");
  let api: Runtime;

  const call = async (path: string, init: { method?: string; body?: unknown } = {}) => {
    const response = await fetch(`${api.url}${path}`, {
      method: init.method ?? "GET",
      ...(init.body === undefined ? {} : { headers: { "content-type": "application/json" }, body: JSON.stringify(init.body) }),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  beforeAll(async () => {
    api = new Runtime({
      storage: env.storage,
      redis: env.redis,
      prefix: env.prefix,
      flows: [flow, longNamed],
      roles: ["api"],
      port: 0,
      insecureNoAuth: true,
      logLevel: "error",
    });
    await api.start();
  });

  afterAll(async () => {
    await api?.stop();
    await env.cleanup();
  });

  it("refuses an idempotencyKey or businessKey over 512 characters, given or from the flow's key function", async () => {
    const long = "k".repeat(4000);
    for (const field of ["idempotencyKey", "businessKey"]) {
      const answer = await call("/api/flows/input_flow/runs", { method: "POST", body: { payload: {}, [field]: long } });
      expect(answer.status).toBe(400);
      expect(answer.body.error).toBe("BadRequest");
      expect(answer.body.message).toMatch(new RegExp(`^${field}: at most 512 characters`));
    }
    const computed = await call("/api/flows/input_flow/runs", { method: "POST", body: { payload: { key: long } } });
    expect(computed.status).toBe(400);
    expect(computed.body.error).toBe("AxKeyFunctionError");
    expect(computed.body.message).toContain("it returned 4000 characters: keys are at most 512");
    const fits = await call("/api/flows/input_flow/runs", { method: "POST", body: { payload: {}, idempotencyKey: "k".repeat(512) } });
    expect(fits.status).toBe(201);
    const empty = await call("/api/flows/input_flow/runs", { method: "POST", body: { payload: { key: "" } } });
    expect(empty).toMatchObject({ status: 400, body: { error: "AxKeyFunctionError" } });
    expect(empty.body.message).toContain("it returned an empty string: return a non-empty key, or undefined for none");
    const object = await call("/api/flows/input_flow/runs", { method: "POST", body: { payload: { key: { id: 1 } } } });
    expect(object).toMatchObject({ status: 400, body: { error: "AxKeyFunctionError" } });
    expect(object.body.message).toContain("it returned an object: return a string");
  });

  it("answers AxBadCursorError for a cursor of the right shape naming no real time or uuid", async () => {
    const id = "0b5c1f5e-4a43-4a52-9d1e-3d2b1a0c9f11";
    const decoded = [
      `2026-02-30T00:00:00.000000Z|${id}`,
      `9999-99-99T99:99:99.999999Z|${id}`,
      `2026-01-01T24:00:00.000000Z|${id}`,
      `2026-01-01T00:00:00.000000Z|${"-".repeat(36)}`,
    ];
    for (const text of decoded) {
      const cursor = Buffer.from(text).toString("base64url");
      const answer = await call(`/api/runs?cursor=${cursor}`);
      expect(answer).toEqual({
        status: 400,
        body: { error: "AxBadCursorError", message: expect.stringContaining(`cursor "${cursor}" is not a page cursor`) },
      });
    }
    const valid = Buffer.from(`2024-02-29T23:59:59.999999Z|${id}`).toString("base64url");
    expect(await call(`/api/runs?cursor=${valid}`)).toEqual({ status: 200, body: { runs: [], nextCursor: null } });
  });

  it("refuses a log node filter PostgreSQL cannot compare (a NUL)", async () => {
    const answer = await call("/api/runs/0b5c1f5e-4a43-4a52-9d1e-3d2b1a0c9f11/logs?node=a%00");
    expect(answer).toEqual({ status: 400, body: { error: "BadRequest", message: "node: contains a NUL or a lone UTF-16 surrogate" } });
  });

  it("reads an upper-case run id as the stored lower-case one, in answers and audit rows", async () => {
    const created = await call("/api/flows/input_flow/runs", { method: "POST", body: { payload: {}, businessKey: "upper" } });
    const runId = created.body.runId as string;
    const cancelled = await call(`/api/runs/${runId.toUpperCase()}/cancel`, { method: "POST" });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.runId).toBe(runId);
    const audit = await call("/api/audit?limit=10");
    const entry = (audit.body.entries as { action: string; target: string }[]).find((e) => e.action === "run.cancel");
    expect(entry?.target).toBe(runId);
  });

  it("says what a number parameter takes, in its own words, not zod's", async () => {
    expect(await call("/api/runs?limit=abc")).toEqual({
      status: 400,
      body: { error: "BadRequest", message: "limit: must be a whole number from 1 to 500" },
    });
    expect((await call("/api/runs?limit=0")).body.message).toBe("limit: must be a whole number from 1 to 500");
    expect((await call("/api/config/versions/abc")).body.message).toBe("version: must be a whole number from 1 to 2147483647");
    expect((await call("/api/runs?limit=99999999999999999999999")).body.message).toBe("limit: must be a whole number from 1 to 500");
    expect((await call("/api/config/versions/3000000000")).body.message).toBe("version: must be a whole number from 1 to 2147483647");
  });

  it("takes one run state or several comma-separated, and names the states when one is not", async () => {
    expect((await call("/api/runs?status=pending,running")).status).toBe(200);
    expect(await call("/api/runs?status=running,finished")).toEqual({
      status: 400,
      body: {
        error: "BadRequest",
        message: 'status: must be one of "pending", "running", "success", "failed", "cancelled", or several comma-separated',
      },
    });
  });

  it("refuses query parameters a list route does not take, naming them and what it takes", async () => {
    expect(await call("/api/runs?busnessKey=x")).toEqual({
      status: 400,
      body: {
        error: "BadRequest",
        message:
          'query: unknown parameter "busnessKey"; this route takes flow, status, businessKey, idempotencyKey, trigger, from, to, cursor, limit',
      },
    });
    for (const path of [
      "/api/runs?flow[]=x",
      "/api/backfills?limt=2",
      "/api/audit?offset=1",
      "/api/runs/0b5c1f5e-4a43-4a52-9d1e-3d2b1a0c9f11/logs?nodes=a",
    ]) {
      const answer = await call(path);
      expect(answer.status, path).toBe(400);
      expect(answer.body.message, path).toMatch(/^query: unknown parameter "/);
    }
  });

  it("says once what a date or a number in a body must be, with the form or the range", async () => {
    const instant = "must be an ISO 8601 date-time with its UTC offset, such as 2026-01-01T02:00:00Z or 2026-01-01T03:00:00+01:00";
    expect((await call("/api/runs?from=yesterday")).body.message).toBe(`from: ${instant}`);
    const token = await call("/api/tokens", { method: "POST", body: { name: "dates", scope: "read", expiresAt: "garbage" } });
    expect(token).toEqual({ status: 400, body: { error: "BadRequest", message: `expiresAt: ${instant}` } });
    const backfill = await call("/api/flows/input_flow/backfills", {
      method: "POST",
      body: { from: "2026-01-01T00:00:00Z", to: "2026-01-02", maxConcurrentRuns: 1e300 },
    });
    expect(backfill.body.message).toBe(`to: ${instant}; maxConcurrentRuns: must be a whole number from 1 to 2147483647`);
  });

  it("refuses query parameters on a route that takes none, rather than ignoring a misspelt filter", async () => {
    for (const path of ["/api/flows?x=1", "/api/runs/0b5c1f5e-4a43-4a52-9d1e-3d2b1a0c9f11?flow=a", "/api/config/cluster?task=input_echo"]) {
      const answer = await call(path);
      expect(answer.status, path).toBe(400);
      expect(answer.body.message, path).toMatch(/^query: unknown parameter "(x|flow|task)"; this route takes no query parameters$/);
    }
    expect((await call("/api/flows")).status).toBe(200);
    // The console's pages keep their filters in the address: not the API's to refuse.
    expect((await fetch(`${api.url}/runs?flow=input_flow`)).status).toBe(200);
  });

  it("serves a flow whose name is longer than a path segment's usual limit", async () => {
    expect(LONG_NAME.length).toBeGreaterThan(100);
    expect((await call(`/api/flows/${LONG_NAME}`)).body).toMatchObject({ name: LONG_NAME });
    const triggered = await call(`/api/flows/${LONG_NAME}/runs`, { method: "POST", body: { payload: 1 } });
    expect(triggered.status).toBe(201);
  });

  it("answers a URL it cannot decode, and a route it does not have, as { error, message }", async () => {
    expect(await call("/api/runs/%E0%A4%A")).toEqual({
      status: 400,
      body: { error: "BadRequest", message: expect.stringMatching(/%E0%A4%A.*; percent-encode the URL's special characters$/) },
    });
    expect(await call("/api/runs?flow=%ZZ&limit=1")).toEqual({
      status: 400,
      body: {
        error: "BadRequest",
        message: "the query string of /api/runs?flow=%ZZ&limit=1 cannot be decoded; percent-encode its special characters",
      },
    });
    expect((await call("/api/runs?flow=a%20b+c&limit=1")).status).toBe(200);
    expect(await call("/api/nothing-here", { method: "POST" })).toEqual({
      status: 404,
      body: { error: "NotFound", message: "no route POST /api/nothing-here; GET /api/openapi.json lists them" },
    });
    // Longer than any name the router takes: said so, rather than "no route".
    expect(await call(`/api/flows/${"f".repeat(5000)}`)).toEqual({
      status: 414,
      body: {
        error: "UriTooLong",
        message: "a path segment is over 4096 characters; no flow name, run id or other name the API takes is that long",
      },
    });
    const quoted = (await call(`/api/nothing?${"q".repeat(1000)}`)).body as { message: string };
    expect(quoted.message.length).toBeLessThan(300);
    // A trailing slash is the same route, not a run or flow with an empty name.
    expect(await call("/api/runs/?limit=1")).toMatchObject({ status: 200, body: { runs: expect.any(Array) } });
    expect(await call("/api/flows/")).toMatchObject({ status: 200, body: { flows: expect.any(Array) } });
  });

  it("bounds what a config change records, and says a too-large body is not about run payloads there", async () => {
    const long = await call("/api/config", { method: "POST", body: { yaml: "flows: {}\n", author: "a".repeat(201) } });
    expect(long).toEqual({
      status: 400,
      body: { error: "BadRequest", message: "author: at most 200 characters: a name or an email address" },
    });
    const huge = await call("/api/config", { method: "POST", body: { yaml: "#".repeat(5 * 1024 * 1024), author: "ops" } });
    expect(huge.status).toBe(413);
    expect((huge.body as { message: string }).message).not.toMatch(/payload/);
  });

  it("refuses a token whose expiresAt is already past", async () => {
    const past = await call("/api/tokens", { method: "POST", body: { name: "past", scope: "read", expiresAt: "2020-01-01T00:00:00Z" } });
    expect(past).toEqual({
      status: 400,
      body: {
        error: "BadRequest",
        message: "expiresAt: is in the past, so the token would never work; give a future time, or none to never expire",
      },
    });
    const future = await call("/api/tokens", {
      method: "POST",
      body: { name: "future", scope: "read", expiresAt: new Date(Date.now() + 3_600_000).toISOString() },
    });
    expect(future.status).toBe(201);
  });
});
