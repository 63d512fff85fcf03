/**
 * POST /api/flows/:flow/runs against arbitrary JSON bodies, raw text and flow names, sent in
 * concurrent bursts to a real server on real PostgreSQL and Redis: every answer is 201, 200, 400,
 * 404 or 413 (never 500), and the rows written are exactly the runs answered 201.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, Runtime } from "ax-scheduler";
import { hostileJson, hostileString, storableJson, storableString } from "../../helpers/arbitraries.js";
import { isolate } from "../../helpers/isolated.js";

const FLOW = "prop_http_flow";
const echo = ax.task({ name: "prop_http_echo" }, (value: unknown) => value);
const flow = ax.flow({ name: FLOW }, (input) => void echo(input));

const ALLOWED = [200, 201, 400, 404, 413];

interface Request {
  flow: string;
  body: string;
}

/** Percent-encodes any string; a lone surrogate cannot travel in a URL, so it arrives as U+FFFD. */
function pathSegment(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return [...Buffer.from(text, "utf8")].map((b) => `%${b.toString(16).padStart(2, "0")}`).join("");
  }
}

/** Requests built from `text` (strings) and `json` (values): mostly well-formed triggers, then anything. */
function requests(text: fc.Arbitrary<string>, json: fc.Arbitrary<unknown>): fc.Arbitrary<Request> {
  const key = fc.oneof(fc.constantFrom("k1", "k2", ""), text);
  const envelope = fc.record({ payload: json, idempotencyKey: key, businessKey: key }, { requiredKeys: [] });
  const body = fc.oneof(
    { arbitrary: envelope.map((e) => JSON.stringify(e)), weight: 6 },
    { arbitrary: json.map((j) => JSON.stringify(j)), weight: 2 },
    { arbitrary: fc.tuple(envelope, json).map(([e, extra]) => JSON.stringify({ ...e, extra })), weight: 1 },
    { arbitrary: text, weight: 1 },
    { arbitrary: fc.constant(JSON.stringify({ payload: "x".repeat(1024 * 1024 + 10) })), weight: 1 },
  );
  return fc.record({ flow: fc.oneof({ arbitrary: fc.constant(FLOW), weight: 8 }, { arbitrary: text, weight: 1 }), body });
}

describe("HTTP trigger body, property-based", () => {
  const env = isolate("httpprop");
  let api: Runtime;

  async function rows(): Promise<{ runs: number; nodes: number; keys: number }> {
    const [row] = await env.sql<{ runs: number; nodes: number; keys: number }>(
      "select (select count(*)::int from runs) as runs, (select count(*)::int from node_runs) as nodes, (select count(*)::int from idempotency_keys) as keys",
    );
    return row!;
  }

  /** Sends a burst at once (so they share group-commit batches) and checks each answer and the rows. */
  async function sendBurst(burst: Request[]): Promise<void> {
    const before = await rows();
    const answers = await Promise.all(
      burst.map(async (r) => {
        const response = await fetch(`${api.url}/api/flows/${pathSegment(r.flow)}/runs`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: r.body,
        });
        const text = await response.text();
        return { status: response.status, body: text, request: r };
      }),
    );
    for (const a of answers) {
      const shown = `${a.status} ${a.body.slice(0, 300)} for ${JSON.stringify(a.request).slice(0, 300)}`;
      expect(ALLOWED, shown).toContain(a.status);
      if (a.status >= 400) expect(JSON.parse(a.body), shown).toMatchObject({ error: expect.any(String), message: expect.any(String) });
    }
    const created = answers.filter((a) => a.status === 201).map((a) => (JSON.parse(a.body) as { runId: string }).runId);
    const after = await rows();
    expect(after.runs - before.runs, "runs written vs answered 201").toBe(created.length);
    expect(after.nodes - before.nodes, "one node row per created run").toBe(created.length);
    const answered = answers
      .filter((a) => a.status === 200 || a.status === 201)
      .map((a) => (JSON.parse(a.body) as { runId: string }).runId);
    if (answered.length > 0) {
      const found = await env.sql<{ id: string }>("select id from runs where id = any($1::uuid[])", [answered]);
      expect(found.length, "every answered run id exists").toBe(new Set(answered).size);
    }
  }

  beforeAll(async () => {
    api = new Runtime({
      storage: env.storage,
      redis: env.redis,
      prefix: env.prefix,
      flows: [flow],
      roles: ["api"],
      port: 0,
      insecureNoAuth: true,
      logLevel: "fatal",
    });
    await api.start();
  });

  afterAll(async () => {
    await api?.stop();
    await env.cleanup();
  });

  it("answers storable unicode and any JSON shape with 201/200/400/404/413, writing exactly the runs answered 201", async () => {
    await fc.assert(fc.asyncProperty(fc.array(requests(storableString, storableJson), { minLength: 1, maxLength: 8 }), sendBurst), {
      numRuns: 60,
    });
  }, 300_000);

  // PostgreSQL's jsonb refuses NUL and lone surrogates: such a request must get its own 400
  // (AxPayloadError naming the JSON path) while the innocent requests of the same batch succeed.
  it("answers NUL, lone surrogates and any unicode without a 500, and a refused request writes nothing", async () => {
    await fc.assert(fc.asyncProperty(fc.array(requests(hostileString, hostileJson), { minLength: 1, maxLength: 8 }), sendBurst), {
      numRuns: 60,
    });
  }, 300_000);
});
