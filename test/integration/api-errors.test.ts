import { createServer, type AddressInfo } from "node:net";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pino } from "pino";
import { AxPortInUseError, ax, Client, Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

const echo = ax.task({ name: "api_echo" }, (value: unknown) => value);
const echoFlow = ax.flow({ name: "api_echo_flow" }, (input) => {
  echo(input);
});

describe("the HTTP API's 500 answers", () => {
  const env = isolate("apierrors");
  const lines: Record<string, unknown>[] = [];
  let api: Runtime;

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    });
    api = new Runtime({
      storage: env.storage,
      redis: env.redis,
      prefix: env.prefix,
      flows: [echoFlow],
      roles: ["api"],
      port: 0,
      insecureNoAuth: true,
      logger: pino({ level: "error" }, sink),
    });
    await api.start();
  });

  afterAll(async () => {
    await api?.stop();
    await env.cleanup();
  });

  it("say only InternalError and a request id; the details, query included, go to the log under that id", async () => {
    // A real failure of our own: the table the trigger writes has gone.
    await env.sql("alter table runs rename to runs_gone");
    try {
      const response = await fetch(`${api.url}/api/flows/api_echo_flow/runs`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ payload: { secret: "marker-3f9a" } }),
      });
      expect(response.status).toBe(500);
      const body = (await response.json()) as Record<string, string>;
      expect(Object.keys(body).sort()).toEqual(["error", "message", "requestId"]);
      expect(body.error).toBe("InternalError");
      expect(body.message).toContain(body.requestId);
      expect(JSON.stringify(body)).not.toMatch(/marker-3f9a|runs_gone|insert|select|relation/);
      const logged = lines.find((line) => line.reqId === body.requestId);
      expect(logged).toBeDefined();
      expect(JSON.stringify(logged)).toMatch(/relation .*runs.* does not exist/);
    } finally {
      await env.sql("alter table runs_gone rename to runs");
    }
  });
});

describe("the HTTP API's 4xx answers for what schemas alone let through", () => {
  const env = isolate("api4xx");
  let api: Runtime;
  const post = (path: string, body: string, headers: Record<string, string> = { "content-type": "application/json" }) =>
    fetch(`${api.url}${path}`, { method: "POST", headers, body });

  beforeAll(async () => {
    api = testRuntime(env, { flows: [echoFlow], roles: ["api"], port: 0, logLevel: "fatal" });
    await api.start();
  });

  afterAll(async () => {
    await api?.stop();
    await env.cleanup();
  });

  it("numbers past PostgreSQL's integer and NUL in paths or bodies are 400s naming the field, not 500s", async () => {
    const runId = "0b5c1f5e-4a43-4a52-9d1e-3d2b1a0c9f11";
    const answers = await Promise.all([
      post(
        "/api/flows/api_echo_flow/backfills",
        JSON.stringify({ from: "2026-01-01T00:00:00Z", to: "2026-01-02T00:00:00Z", maxConcurrentRuns: 3e9 }),
      ),
      fetch(`${api.url}/api/config/versions/2147483648`),
      fetch(`${api.url}/api/runs/${runId}/logs?attempt=3000000000`),
      fetch(`${api.url}/api/flows/%00/versions`),
      post("/api/flows/%00/backfills", JSON.stringify({ from: "2026-01-01T00:00:00Z", to: "2026-01-02T00:00:00Z" })),
      post("/api/config", JSON.stringify({ yaml: "# c\n", author: "x\u0000y" })),
      fetch(`${api.url}/api/events?after=99999999999999999999999-0`),
    ]);
    expect(answers.map((a) => a.status)).toEqual([400, 400, 400, 400, 400, 400, 400]);
    for (const answer of answers) expect(((await answer.json()) as { error: string }).error).toBe("BadRequest");
  });

  it("a __proto__ key, a body that is not JSON or nested too deeply, no content-type and an oversized body each say what to do", async () => {
    const proto = await post("/api/flows/api_echo_flow/runs", '{"payload":{"__proto__":{"x":1}}}');
    expect(proto.status).toBe(400);
    expect(await proto.json()).toMatchObject({
      error: "BadRequest",
      message: expect.stringMatching(/has a "__proto__" key.*rename the key/),
    });
    const broken = await post("/api/flows/api_echo_flow/runs", '{"payload":');
    expect(await broken.json()).toMatchObject({ error: "BadRequest", message: expect.stringMatching(/^the body is not valid JSON \(/) });
    const untyped = await post("/api/flows/api_echo_flow/runs", "{}", {});
    expect(untyped.status).toBe(415);
    expect(await untyped.json()).toMatchObject({ message: expect.stringContaining("content-type: application/json") });
    // Deep enough to overflow a recursive parser: the payload's own depth limit is what the answer names.
    const deep = await post("/api/flows/api_echo_flow/runs", `{"payload":${"[".repeat(20_000)}${"]".repeat(20_000)}}`);
    expect(deep.status).toBe(400);
    expect(await deep.json()).toMatchObject({ error: "AxPayloadError", message: expect.stringContaining("at most 256 levels") });
    const huge = await post("/api/flows/api_echo_flow/runs", JSON.stringify({ payload: "x".repeat(5 * 1024 * 1024) }));
    expect(huge.status).toBe(413);
    expect(await huge.json()).toMatchObject({
      error: "AxPayloadTooLargeError",
      message: expect.stringContaining("store the data elsewhere"),
    });
  });

  it("HEAD /api/events answers its headers and ends", async () => {
    const head = await fetch(`${api.url}/api/events`, { method: "HEAD", signal: AbortSignal.timeout(3000) });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-type")).toContain("text/event-stream");
  });
});

describe("a Runtime whose API port is taken", () => {
  const env = isolate("portinuse");

  afterAll(async () => {
    await env.cleanup();
  });

  it("fails its start with AxPortInUseError and leaves no role running", async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    const port = (blocker.address() as AddressInfo).port;
    // A run queued before the start: a worker role started ahead of the port would run it.
    const registrar = testRuntime(env, { flows: [echoFlow], roles: ["coordinator"] });
    await registrar.start();
    const queued = await registrar.client().triggerFlow("api_echo_flow", 0);
    await registrar.stop();
    const runtime = testRuntime(env, { flows: [echoFlow], roles: ["coordinator", "worker", "api"], port, logLevel: "fatal" });
    try {
      const refused = await runtime.start().then(
        () => undefined,
        (error: Error) => error,
      );
      expect(refused).toBeInstanceOf(AxPortInUseError);
      expect(refused?.message).toMatch(new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: another process uses that port.*--port`));
      expect(() => runtime.client()).toThrow(/^this Runtime was stopped \(or its start failed\)/);
      // Its worker stopped with it: a run triggered now stays queued.
      const client = new Client({ storage: env.storage, redis: env.redis, prefix: env.prefix });
      const runId = await client.triggerFlow("api_echo_flow", 1);
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect((await client.getRun(runId)).status).toBe("pending");
      // "Nothing was started" holds: the run queued before the start got no attempt either.
      expect((await client.getRun(queued)).tasks[0]!.attempts).toEqual([]);
      await client.close();
    } finally {
      await runtime.stop();
      blocker.close();
    }
  });
});
