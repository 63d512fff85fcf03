import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, type Runtime } from "ax-scheduler";
import { API_ROUTES, openApiPath } from "@ax/server";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

// The OpenAPI document is made from the routes' zod schemas; this checks the other half of that
// promise: what each route really answers is valid against the document the server serves, whose
// objects admit no field they do not name.

const fetchOrder = ax.task({ name: "resp_fetch" }, (input: { order: string }) => {
  ax.context().log.info(`fetching ${input.order}`);
  return { order: input.order, amount: 12 };
});
const bill = ax.task({ name: "resp_bill", retries: 0 }, (order: { order: string; amount: number }) => {
  if (order.order === "bad") throw new Error("the invoice API refused the order");
  return `billed ${order.order}`;
});
const respFlow = ax.flow({ name: "resp_flow", schedule: "0 3 * * *", businessKey: (input: { order: string }) => input.order }, (input) => {
  bill(fetchOrder(input));
});

const env = isolate("httpresp");
let runtime: Runtime;
const ids = { good: "", bad: "", backfill: "", version: 0 };

async function call(method: "GET" | "POST", path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${runtime.url}${path}`, {
    method,
    ...(body === undefined ? {} : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
  });
  return { status: response.status, body: await response.json() };
}

let document: { paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: object }> }> }>> };
const ajv = new Ajv2020({ allErrors: true, strict: false });
addFormats.default(ajv);
const validators = new Map<string, ValidateFunction>();

/** Validates an answer with the JSON Schema the served document gives its route and status. */
function expectDocumented(route: string, answer: { status: number; body: unknown }): void {
  const [method, url] = route.split(" ") as [string, string];
  const id = `${route} ${answer.status}`;
  if (!validators.has(id)) {
    const schema =
      document.paths[openApiPath(url)]?.[method.toLowerCase()]?.responses[answer.status]?.content?.["application/json"]?.schema;
    expect(schema, `${id} has no JSON schema in the document: ${JSON.stringify(answer.body)}`).toBeDefined();
    validators.set(id, ajv.compile(schema!));
  }
  const validate = validators.get(id)!;
  validate(answer.body);
  expect(validate.errors ?? [], `${id} answered ${JSON.stringify(answer.body).slice(0, 2000)}`).toEqual([]);
}

async function waitForRun(id: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const run = (await call("GET", `/api/runs/${id}`)).body as { finishedAt: string | null };
    if (run.finishedAt) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`run ${id} did not finish in 30 s`);
}

beforeAll(async () => {
  runtime = testRuntime(env, { flows: [respFlow], roles: ["coordinator", "worker", "api"], port: 0 });
  await runtime.start();
  document = (await call("GET", "/api/openapi.json")).body as typeof document;

  const good = await call("POST", "/api/flows/resp_flow/runs", { payload: { order: "o-1" }, idempotencyKey: "k-1", priority: 2 });
  const bad = await call("POST", "/api/flows/resp_flow/runs", { payload: { order: "bad" } });
  expectDocumented("POST /api/flows/:flow/runs", good);
  ids.good = (good.body as { runId: string }).runId;
  ids.bad = (bad.body as { runId: string }).runId;
  await waitForRun(ids.good);
  await waitForRun(ids.bad);

  const rerun = await call("POST", `/api/runs/${ids.bad}/rerun`, {});
  expectDocumented("POST /api/runs/:id/rerun", rerun);
  const cancelled = await call("POST", `/api/runs/${(rerun.body as { runId: string }).runId}/cancel`, {});
  expectDocumented("POST /api/runs/:id/cancel", cancelled);

  const backfill = await call("POST", "/api/flows/resp_flow/backfills", { from: "2026-11-01T00:00:00Z", to: "2026-11-03T00:00:00Z" });
  expectDocumented("POST /api/flows/:flow/backfills", backfill);
  ids.backfill = (backfill.body as { backfillId: string }).backfillId;

  const config = await call("POST", "/api/config", { yaml: "tasks:\n  resp_bill: { retries: 1 }\n", author: "resp-test" });
  expectDocumented("POST /api/config", config);
  ids.version = (config.body as { version: number }).version;
  const same = await call("POST", "/api/config", { yaml: "tasks:\n  resp_bill: { retries: 1 }\n", author: "resp-test" });
  expectDocumented("POST /api/config", same);
  expect(same).toMatchObject({ status: 200, body: { version: ids.version, unchanged: true } });
  const checked = await call("POST", "/api/config/check", { yaml: "tasks:\n  resp_bill: { retries: 2 }\n" });
  expectDocumented("POST /api/config/check", checked);
  expect(checked).toMatchObject({ status: 200, body: { inForce: ids.version, unchanged: false } });
  expectDocumented("POST /api/config/check", await call("POST", "/api/config/check", { yaml: "tasks:\n  resp_nope: {}\n" }));
  expectDocumented(
    "POST /api/config",
    await call("POST", "/api/config", { yaml: "tasks:\n  resp_bill: { retries: 2 }\n", author: "resp-test" }),
  );
  const rolled = await call("POST", "/api/config/rollback", { version: ids.version, author: "resp-test" });
  expectDocumented("POST /api/config/rollback", rolled);
  expect(rolled).toMatchObject({ status: 201, body: { version: ids.version + 2, unchanged: false } });
  expectDocumented("POST /api/config/rollback", await call("POST", "/api/config/rollback", { version: 99, author: "resp-test" }));
  expectDocumented("POST /api/alerts/test", await call("POST", "/api/alerts/test", { group: "nobody" }));

  expectDocumented("POST /api/flows/:flow/schedule/pause", await call("POST", "/api/flows/resp_flow/schedule/pause", {}));
  expectDocumented("POST /api/flows/:flow/schedule/resume", await call("POST", "/api/flows/resp_flow/schedule/resume", {}));
});

afterAll(async () => {
  await runtime?.stop({ timeout: 2 });
  await env.cleanup();
});

describe("every JSON route answers what the OpenAPI document says", () => {
  // Streams and non-JSON answers are covered by their own tests; every other GET route is called here.
  const notJson = ["GET /metrics", "GET /*", "GET /api/events", "GET /api/runs/:id/stream"];
  const paths = (): Record<string, string[]> => ({
    "GET /healthz": ["/healthz"],
    "GET /readyz": ["/readyz"],
    "GET /api/openapi.json": ["/api/openapi.json"],
    "GET /api/flows": ["/api/flows"],
    "GET /api/flows/:name": ["/api/flows/resp_flow"],
    "GET /api/runs": [
      "/api/runs",
      "/api/runs?flow=resp_flow&status=failed",
      "/api/runs?status=pending,running,failed",
      "/api/runs?limit=1",
    ],
    "GET /api/runs/:id": [`/api/runs/${ids.good}`, `/api/runs/${ids.bad}`, "/api/runs/00000000-0000-0000-0000-000000000000"],
    "GET /api/runs/:id/logs": [`/api/runs/${ids.good}/logs`],
    "GET /api/flows/:name/versions": ["/api/flows/resp_flow/versions"],
    "GET /api/flow-overview": ["/api/flow-overview"],
    "GET /api/flow-states": ["/api/flow-states", "/api/flow-states?retired=true"],
    "GET /api/queues": ["/api/queues"],
    "GET /api/queues/:task/keys": ["/api/queues/resp_fetch/keys"],
    "GET /api/schedules": ["/api/schedules"],
    "GET /api/backfills": ["/api/backfills"],
    "GET /api/backfills/:id": [`/api/backfills/${ids.backfill}`],
    "GET /api/workers": ["/api/workers"],
    "GET /api/config": ["/api/config"],
    "GET /api/config/versions": ["/api/config/versions", "/api/config/versions?limit=1"],
    "GET /api/config/diff": [`/api/config/diff?from=${ids.version}&to=${ids.version + 1}`, "/api/config/diff?from=1&to=99"],
    "GET /api/config/versions/:version": [`/api/config/versions/${ids.version}`],
    "GET /api/config/effective": ["/api/config/effective", "/api/config/effective?task=resp_bill", "/api/config/effective?task=resp_nope"],
    "GET /api/config/cluster": ["/api/config/cluster"],
    "GET /api/audit": ["/api/audit"],
    "GET /api/alerts": ["/api/alerts"],
    "GET /api/alerts/mutes": ["/api/alerts/mutes", "/api/alerts/mutes?ended=true"],
    "GET /api/tokens": ["/api/tokens"],
    "GET /api/session": ["/api/session"],
  });

  it("covers every GET route the server documents", () => {
    const gets = Object.keys(API_ROUTES).filter((route) => route.startsWith("GET ") && !notJson.includes(route));
    expect(Object.keys(paths()).sort()).toEqual(gets.sort());
  });

  it("each answer is valid against its route's schema in the document", async () => {
    for (const [route, urls] of Object.entries(paths())) {
      for (const url of urls) expectDocumented(route, await call("GET", url));
    }
  });

  it("the run answers carry the fields a failed node, a retry budget and a schedule fill in", async () => {
    const bad = (await call("GET", `/api/runs/${ids.bad}`)).body as {
      status: string;
      tasks: { key: string; status: string; error: { notRetried: string | null } | null; attempts: { outcome: string }[] }[];
    };
    expect(bad.status).toBe("failed");
    const billed = bad.tasks.find((t) => t.key === "resp_bill")!;
    expect(billed).toMatchObject({ status: "failed", attempts: [{ outcome: "failed" }] });
    expect(billed.error?.notRetried).toMatch(/retries/);
    const schedules = (await call("GET", "/api/schedules")).body as { schedules: { flow: string; lastTick: unknown }[] };
    expect(schedules.schedules.map((s) => s.flow)).toEqual(["resp_flow"]);
  });
});
