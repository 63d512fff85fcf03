import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Client, Runtime } from "ax-scheduler";
import { helloFlow } from "../fixtures/hello-flow.js";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

interface Page {
  runs: { id: string; createdAt: string; trigger: string }[];
  nextCursor: string | null;
}

/** The routes the web console adds: run paging, the live run feed, workers, flow versions, the console itself. */
describe("console API", () => {
  const env = isolate("consoleapi");
  let runtime: Runtime;
  let client: Client;
  const get = async <T>(path: string) => {
    const response = await fetch(`${runtime.url}${path}`);
    return { status: response.status, body: (await response.json()) as T };
  };

  beforeAll(async () => {
    runtime = testRuntime(env, { flows: [helloFlow], roles: ["coordinator", "worker", "api"], port: 0 });
    await runtime.start();
    client = runtime.client();
  });

  afterAll(async () => {
    await client?.close();
    await runtime?.stop();
    await env.cleanup();
  });

  it("pages runs newest first by keyset, ties on created_at included, with trigger and time filters", async () => {
    const ids = await client.triggerFlows(
      "hello_flow",
      Array.from({ length: 23 }, (_, i) => ({ name: `p${i}` })),
    );
    // Several runs at one microsecond: the cursor's id breaks the tie, so none is skipped or repeated.
    await env.sql("update runs set created_at = date_trunc('second', created_at) where id = any($1::uuid[])", [ids.slice(0, 10)]);
    const seen: Page["runs"] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const { status, body }: { status: number; body: Page } = await get<Page>(`/api/runs?limit=5${cursor ? `&cursor=${cursor}` : ""}`);
      expect(status).toBe(200);
      seen.push(...body.runs);
      cursor = body.nextCursor;
      pages += 1;
    } while (cursor);
    expect(pages).toBe(5);
    expect(new Set(seen.map((r) => r.id)).size).toBe(23);
    expect(seen.map((r) => r.id).sort()).toEqual([...ids].sort());
    const times = seen.map((r) => Date.parse(r.createdAt));
    expect(times).toEqual([...times].sort((a, b) => b - a));

    expect((await get<Page>("/api/runs?trigger=event")).body.runs).toEqual([]);
    expect((await get<Page>("/api/runs?trigger=manual&limit=500")).body.runs).toHaveLength(23);
    const future = new Date(Date.now() + 60_000).toISOString();
    expect((await get<Page>(`/api/runs?from=${encodeURIComponent(future)}`)).body.runs).toEqual([]);
    expect((await get<Page>(`/api/runs?to=${encodeURIComponent(future)}&limit=500`)).body.runs).toHaveLength(23);
    const bad = await get<{ error: string; message: string }>("/api/runs?cursor=nonsense");
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe("AxBadCursorError");
  });

  it("streams a run to every client watching it until it ends", async () => {
    const runId = await client.triggerFlow("hello_flow", { name: "stream" });
    const watch = async () => {
      const response = await fetch(`${runtime.url}/api/runs/${runId}/stream`);
      expect(response.headers.get("content-type")).toBe("text/event-stream");
      const text = await response.text();
      return text
        .split("\n\n")
        .filter((block) => block.startsWith("data: "))
        .map((block) => JSON.parse(block.slice(6)) as { status: string; tasks: { status: string }[] });
    };
    const [a, b] = await Promise.all([watch(), watch()]);
    for (const events of [a, b]) {
      expect(events.at(-1)?.status).toBe("success");
      expect(events.at(-1)?.tasks.every((t) => t.status === "success")).toBe(true);
    }
    const missing = await fetch(`${runtime.url}/api/runs/00000000-0000-0000-0000-000000000000/stream`);
    expect(missing.status).toBe(404);
  });

  it("ends open streams when the server closes", async () => {
    // A second API process: stopping it must not wait for the stream it serves.
    const other = testRuntime(env, { flows: [helloFlow], roles: ["api"], port: 0 });
    await other.start();
    const runId = await client.triggerFlow("hello_flow", { name: "later" }, { delay: "1h" });
    const response = await fetch(`${other.url}/api/runs/${runId}/stream`);
    const reader = response.body!.getReader();
    await reader.read();
    const started = Date.now();
    await other.stop();
    expect(Date.now() - started).toBeLessThan(5000);
    await expect(reader.read().then((r) => r.done)).resolves.toBe(true);
    await client.cancel(runId);
  });

  it("lists live workers with their queues and load, and a flow's versions", async () => {
    const { body } = await get<{ workers: { id: string; queues: string[]; live: boolean; running: number }[] }>("/api/workers");
    const me = body.workers.find((w) => w.id === runtime.workerId);
    expect(me).toMatchObject({ live: true, running: 0 });
    expect(me?.queues).toContain("default.hello_greet");

    const versions = await get<{ versions: { version: number; nodes: number }[] }>("/api/flows/hello_flow/versions");
    expect(versions.body.versions).toEqual([expect.objectContaining({ version: 1 })]);
    expect((await get("/api/flows/nope/versions")).status).toBe(404);
  });

  it("gives the Flows page every flow's size and recent runs in one answer", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(await client.triggerFlow("hello_flow", { name: `overview-${i}` }));
    for (const id of ids) await client.waitForRun(id, { timeout: "20s" });
    type Overview = { flows: { name: string; version: number; nodes: number; recentRuns: { id: string; status: string }[] }[] };
    const { status, body } = await get<Overview>("/api/flow-overview?runs=2");
    expect(status).toBe(200);
    const hello = body.flows.find((f) => f.name === "hello_flow");
    const described = await get<{ version: number; nodes: unknown[] }>("/api/flows/hello_flow");
    expect(hello).toMatchObject({ version: described.body.version, nodes: described.body.nodes.length });
    // Newest first, as GET /api/runs?flow= lists them.
    const listed = await get<Page>("/api/runs?flow=hello_flow&limit=2");
    expect(hello!.recentRuns.map((r) => r.id)).toEqual(listed.body.runs.map((r) => r.id));
    expect(hello!.recentRuns.every((r) => r.status === "success")).toBe(true);
    expect((await get("/api/flow-overview?runs=1000")).status).toBe(400);
  });

  it("serves the console at / and its pages' paths, and keeps unknown /api paths JSON 404s", async () => {
    for (const path of ["/", "/runs/whatever", "/flows/hello_flow"]) {
      const response = await fetch(`${runtime.url}${path}`);
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toContain("text/html");
      expect(await response.text()).toContain('<div id="root">');
    }
    const unknown = await get<{ error: string }>("/api/nothing-here");
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe("NotFound");
  });
});
