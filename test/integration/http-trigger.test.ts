import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pino } from "pino";
import { Registry } from "prom-client";
import { Validator } from "@seriousme/openapi-schema-validator";
import { ax, type Runtime } from "ax-scheduler";
import { openStore, RUN_STATUSES } from "@ax/store";
import { connectRedis, closeRedis, QueueRegistry } from "@ax/coordinator";
import { API_ROUTES, startServer, triggerBody, listQuery } from "@ax/server";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

interface PaymentEvent {
  event_id: string;
  order: string;
}

const charge = ax.task({ name: "http_charge" }, (e: PaymentEvent) => `charged ${e.order}`);
const receipt = ax.task({ name: "http_receipt" }, (charged: string) => `receipt for ${charged}`);
const paymentFlow = ax.flow(
  {
    name: "http_payment",
    idempotencyKey: (e: PaymentEvent) => `payment-${e.event_id}`,
    businessKey: (e: PaymentEvent) => e.order,
    maxConcurrentRuns: 3,
  },
  (e) => {
    receipt(charge(e));
  },
);

const env = isolate("httptrigger");
let runtime: Runtime;

beforeAll(async () => {
  runtime = testRuntime(env, { flows: [paymentFlow], roles: ["coordinator", "worker", "api"], port: 0 });
  await runtime.start();
});

afterAll(async () => {
  await runtime?.stop({ timeout: 2 });
  await env.cleanup();
});

async function post(path: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${runtime.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function get(path: string): Promise<{ status: number; body: Record<string, any> }> {
  const response = await fetch(`${runtime.url}${path}`);
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

describe("POST /api/flows/:flow/runs applies the flow's own key functions", () => {
  it("a second trigger of the same event answers created: false with the same run id", async () => {
    const event = { event_id: "e-1", order: "order-77" };
    const first = await post("/api/flows/http_payment/runs", { payload: event });
    expect(first.status).toBe(201);
    expect(first.body.created).toBe(true);
    const second = await post("/api/flows/http_payment/runs", { payload: event });
    expect(second.status).toBe(200);
    expect(second.body).toEqual({ runId: first.body.runId, created: false, samePayload: true });
    // The same key with another payload (two events given one key by mistake): told so, the first run stands.
    const other = await post("/api/flows/http_payment/runs", { payload: { order: "order-78", event_id: "e-1" } });
    expect(other).toEqual({ status: 200, body: { runId: first.body.runId, created: false, samePayload: false } });
    // Key order is not a difference.
    const reordered = await post("/api/flows/http_payment/runs", { payload: { order: "order-77", event_id: "e-1" } });
    expect(reordered.body).toMatchObject({ created: false, samePayload: true });
    const run = await runtime.client().waitForRun(first.body.runId as string, { timeout: "20s" });
    expect(run.status).toBe("success");
    expect(run.idempotencyKey).toBe("payment-e-1");
    expect(run.businessKey).toBe("order-77");
    expect(await runtime.client().listRuns({ flow: "http_payment" })).toHaveLength(1);
  });

  it("keys in the request win over the functions", async () => {
    const answer = await post("/api/flows/http_payment/runs", {
      payload: { event_id: "e-1", order: "x" },
      idempotencyKey: "explicit-1",
      businessKey: "explicit-order",
    });
    expect(answer.body.created).toBe(true);
    const run = await runtime.client().getRun(answer.body.runId as string);
    expect(run.idempotencyKey).toBe("explicit-1");
    expect(run.businessKey).toBe("explicit-order");
  });

  it("takes runAt and priority: the run waits pending with them stored", async () => {
    const runAt = new Date(Date.now() + 60_000).toISOString();
    const answer = await post("/api/flows/http_payment/runs", { payload: { event_id: "later", order: "o" }, runAt, priority: 7 });
    expect(answer.status).toBe(201);
    const run = await runtime.client().getRun(answer.body.runId as string);
    expect(run).toMatchObject({ status: "pending", priority: 7, runAt, trigger: "event" });
    expect((await post("/api/flows/http_payment/runs", { payload: { event_id: "x", order: "o" }, priority: 0 })).status).toBe(400);
    expect((await post("/api/flows/http_payment/runs", { payload: { event_id: "x", order: "o" }, runAt: "tomorrow" })).status).toBe(400);
  });

  it("labels the run event unless the body says a person asked for it (trigger: manual)", async () => {
    const byService = await post("/api/flows/http_payment/runs", { payload: { event_id: "svc", order: "o" } });
    expect((await runtime.client().getRun(byService.body.runId as string)).trigger).toBe("event");
    const byPerson = await post("/api/flows/http_payment/runs", { payload: { event_id: "person", order: "o" }, trigger: "manual" });
    expect(byPerson.status).toBe(201);
    expect((await runtime.client().getRun(byPerson.body.runId as string)).trigger).toBe("manual");
    const explicit = await post("/api/flows/http_payment/runs", { payload: { event_id: "explicit", order: "o" }, trigger: "event" });
    expect((await runtime.client().getRun(explicit.body.runId as string)).trigger).toBe("event");
    // The labels the cluster itself gives (schedule, rerun, backfill) are not the caller's to claim.
    const claimed = await post("/api/flows/http_payment/runs", { payload: { event_id: "claimed", order: "o" }, trigger: "schedule" });
    expect(claimed.status).toBe(400);
    expect(await runtime.client().listRuns({ flow: "http_payment", trigger: "schedule" })).toHaveLength(0);
  });

  it("a payload the key function cannot read is a 400 naming the function", async () => {
    const answer = await post("/api/flows/http_payment/runs", { payload: null });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toBe("AxKeyFunctionError");
    expect(answer.body.message).toContain("idempotencyKey");
  });
});

describe("GET /api/flows/:name", () => {
  it("returns the DAG with its edges, options and schedule", async () => {
    const { status, body } = await get("/api/flows/http_payment");
    expect(status).toBe(200);
    expect(body.name).toBe("http_payment");
    expect(body.version).toBe(1);
    expect(body.nodes).toEqual([
      { key: "http_charge", task: "http_charge", queue: "default", upstream: [] },
      { key: "http_receipt", task: "http_receipt", queue: "default", upstream: ["http_charge"] },
    ]);
    expect(body.edges).toEqual([{ from: "http_charge", to: "http_receipt" }]);
    expect(body.options).toEqual({ name: "http_payment", maxConcurrentRuns: 3 });
    expect(body.schedule).toBeNull();
  });

  it("404s an unknown flow", async () => {
    const { status, body } = await get("/api/flows/nope");
    expect(status).toBe(404);
    expect(body.error).toBe("AxUnknownFlowError");
  });
});

describe("GET /api/openapi.json", () => {
  it("an API process without the flow's code takes keys from the request only, and says so once per flow in its log", async () => {
    const lines: string[] = [];
    const log = pino({ level: "warn" }, { write: (line: string) => void lines.push(line) });
    const store = openStore({ url: env.storage });
    const redis = connectRedis(env.redis, log);
    const queues = new QueueRegistry(redis, env.prefix, log);
    const server = await startServer({ db: store.db, queues, registry: new Registry(), log, port: 0, auth: { insecureNoAuth: true } });
    try {
      for (const event_id of ["codeless-1", "codeless-2"]) {
        const response = await fetch(`${server.url}/api/flows/http_payment/runs`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ payload: { event_id, order: "o-9" } }),
        });
        expect(response.status).toBe(201);
      }
      const warnings = lines
        .map((line) => JSON.parse(line) as { code?: string; msg: string })
        .filter((l) => l.code === "AX_FLOW_KEYS_NOT_APPLIED");
      expect(warnings).toHaveLength(1);
      expect(warnings[0]!.msg).toContain(
        'flow "http_payment" computes its idempotencyKey and businessKey in code, which this API process does not have',
      );
      expect(warnings[0]!.msg).toContain("ax server <entry>");
    } finally {
      await server.close();
      await queues.close();
      closeRedis(redis);
      await store.close();
    }
  });

  it("is a valid OpenAPI 3 document listing every route", async () => {
    const { status, body: doc } = await get("/api/openapi.json");
    expect(status).toBe(200);
    const validator = new Validator();
    const result = await validator.validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);

    // Every route the server registers is documented, and nothing else.
    const store = openStore({ url: env.storage });
    const log = pino({ level: "silent" });
    const redis = connectRedis(env.redis, log);
    const queues = new QueueRegistry(redis, env.prefix, log);
    const server = await startServer({ db: store.db, queues, registry: new Registry(), log, port: 0, auth: { insecureNoAuth: true } });
    try {
      expect([...new Set(server.routes)].sort()).toEqual(Object.keys(API_ROUTES).sort());
      const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) =>
        Object.keys(ops).map((method) => `${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ":$1")}`),
      );
      expect(documented.sort()).toEqual([...new Set(server.routes)].sort());
    } finally {
      await server.close();
      await queues.close();
      closeRedis(redis);
      await store.close();
    }
  });

  it("describes requests with the schemas the routes parse", async () => {
    const { body: doc } = await get("/api/openapi.json");
    expect(API_ROUTES["POST /api/flows/:flow/runs"]!.body).toBe(triggerBody);
    expect(API_ROUTES["GET /api/runs"]!.query).toBe(listQuery);
    const triggerSchema = doc.paths["/api/flows/{flow}/runs"].post.requestBody.content["application/json"].schema;
    expect(Object.keys(triggerSchema.properties).sort()).toEqual([
      "businessKey",
      "idempotencyKey",
      "payload",
      "priority",
      "runAt",
      "trigger",
    ]);
    expect(triggerSchema.properties.trigger).toMatchObject({ enum: ["event", "manual"], default: "event" });
    expect(triggerSchema.required ?? []).not.toContain("trigger");
    expect(triggerSchema.additionalProperties).toBe(false);
    // What the document forbids, the route refuses.
    expect((await post("/api/flows/http_payment/runs", { payload: {}, extra: 1 })).status).toBe(400);
    const parameters = doc.paths["/api/runs"].get.parameters as {
      name: string;
      in: string;
      schema: { enum?: string[]; maximum?: number; pattern?: string };
    }[];
    expect(parameters.map((p) => p.name).sort()).toEqual([
      "businessKey",
      "cursor",
      "flow",
      "from",
      "idempotencyKey",
      "limit",
      "status",
      "to",
      "trigger",
    ]);
    // One state or several comma-separated: the pattern names every state.
    const statusPattern = new RegExp(parameters.find((p) => p.name === "status")!.schema.pattern!);
    for (const status of RUN_STATUSES) expect(statusPattern.test(status)).toBe(true);
    expect(statusPattern.test("pending,running")).toBe(true);
    expect(statusPattern.test("sleeping")).toBe(false);
    expect(parameters.find((p) => p.name === "limit")!.schema.maximum).toBe(500);
    expect((await get("/api/runs?limit=501")).status).toBe(400);
    expect((await get("/api/runs?status=sleeping")).status).toBe(400);
  });
});

describe("what the server refuses before a route acts", () => {
  it("a route that takes no body refuses one with content, and takes none or {}", async () => {
    const runId = (await post("/api/flows/http_payment/runs", { payload: { event_id: "nobody-1", order: "o-nb" } })).body.runId as string;
    const refused = await post(`/api/runs/${runId}/cancel`, { force: true });
    expect(refused).toEqual({
      status: 400,
      body: { error: "BadRequest", message: "body: POST /api/runs/:id/cancel takes no body; send none, or {}" },
    });
    expect((await get(`/api/runs/${runId}`)).body.status).not.toBe("cancelled");
    expect((await post(`/api/runs/${runId}/cancel`, {})).status).toBe(200);
  });

  it("a JSON null body is not an empty one: a trigger with it is refused and makes no run", async () => {
    const before = await env.sql<{ n: number }>("select count(*)::int as n from runs");
    const refused = await post("/api/flows/http_payment/runs", null);
    expect(refused.status).toBe(400);
    expect(refused.body.message).toMatch(/^body: .*object/);
    expect(await env.sql<{ n: number }>("select count(*)::int as n from runs")).toEqual(before);
  });

  it("a misspelt body key is refused naming the key meant, and makes no run", async () => {
    const before = await env.sql<{ n: number }>("select count(*)::int as n from runs");
    const refused = await post("/api/flows/http_payment/runs", { payload: { id: "p-typo" }, idempotency_key: "k-1", bizKey: "b" });
    expect(refused.status).toBe(400);
    expect(refused.body.message).toBe(
      'body: unknown key "idempotency_key"; did you mean idempotencyKey?; unknown key "bizKey"; the keys are payload, idempotencyKey, businessKey, runAt, priority, trigger',
    );
    expect(await env.sql<{ n: number }>("select count(*)::int as n from runs")).toEqual(before);
  });

  it("a run list whose from is after its to says so", async () => {
    const answer = await get("/api/runs?from=2026-12-05T00:00:00Z&to=2026-12-01T00:00:00Z");
    expect(answer.status).toBe(400);
    expect(answer.body.message).toBe("from: is after to: swap them");
  });

  it("the OpenAPI document lists the answers every route may give before it acts: 400, and 413 and 415 for writes", async () => {
    const { body: doc } = await get("/api/openapi.json");
    for (const [path, operations] of Object.entries(doc.paths as Record<string, Record<string, { responses: Record<string, unknown> }>>)) {
      for (const [method, op] of Object.entries(operations)) {
        expect(Object.keys(op.responses), `${method} ${path}`).toContain("400");
        if (method !== "get") expect(Object.keys(op.responses), `${method} ${path}`).toEqual(expect.arrayContaining(["413", "415"]));
      }
    }
  });
});
