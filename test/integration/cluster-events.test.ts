import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, type AxEvent, type Client, type Runtime } from "ax-scheduler";
import { helloFlow } from "../fixtures/hello-flow.js";
import { isolate } from "../helpers/isolated.js";
import { startAx, type Child } from "../helpers/processes.js";
import { testRuntime } from "../helpers/runtime.js";

/** Reads an SSE response until `enough` holds for the events parsed so far, then aborts it. */
async function readSse(url: string, enough: (events: { id: string; data: AxEvent }[]) => boolean, timeoutMs = 15_000) {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  const events: { id: string; data: AxEvent }[] = [];
  const response = await fetch(url, { signal: abort.signal });
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
  const decoder = new TextDecoder();
  let buffer = "";
  try {
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      let end = buffer.indexOf("\n\n");
      while (end >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const id = /^id: (.+)$/m.exec(block)?.[1];
        const data = /^data: (.+)$/m.exec(block)?.[1];
        if (id && data) events.push({ id, data: JSON.parse(data) as AxEvent });
        end = buffer.indexOf("\n\n");
      }
      if (enough(events)) break;
    }
  } catch (error) {
    if (!abort.signal.aborted) throw error;
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
  return events;
}

describe("cluster-wide events: ax.onEvent and GET /api/events see what other processes do", () => {
  const env = isolate("events");
  let worker: Child;
  let runtime: Runtime;
  let client: Client;
  const seen: AxEvent[] = [];
  let unsubscribe: () => void;

  beforeAll(async () => {
    // Process A runs every attempt; this process (B) has no worker role, so every task event comes from A.
    worker = startAx(["worker", "test/fixtures/hello-flow.ts", "--storage", env.storage, "--prefix", env.prefix], {
      DATABASE_URL: env.storage,
      AX_LOG_LEVEL: "info",
    });
    unsubscribe = ax.onEvent((event) => {
      seen.push(event);
    });
    runtime = testRuntime(env, { flows: [helloFlow], roles: ["coordinator", "api"], port: 0 });
    await runtime.start();
    client = runtime.client();
    await worker.waitFor(/ax worker started/, 50_000);
  }, 60_000);

  afterAll(async () => {
    unsubscribe?.();
    await worker?.stop();
    await runtime?.stop();
    await env.cleanup();
  });

  it("onEvent in process B receives the task and run events of attempts that ran in process A, each with an id", async () => {
    const runId = await client.triggerFlow("hello_flow", "ax");
    expect((await client.waitForRun(runId, { timeout: "20s" })).status).toBe("success");
    await expect.poll(() => seen.filter((e) => e.runId === runId).map((e) => e.name), { timeout: 10_000 }).toContain("run_succeeded");
    const ours = seen.filter((e) => e.runId === runId);
    expect(ours.map((e) => `${e.name}:${e.nodeKey ?? ""}`)).toEqual([
      "run_started:",
      "task_started:hello_greet",
      "task_succeeded:hello_greet",
      "task_started:hello_measure",
      "task_succeeded:hello_measure",
      "run_succeeded:",
    ]);
    expect(new Set(ours.map((e) => e.id)).size).toBe(ours.length);
    for (const event of ours) {
      expect(event.id).toMatch(/^\d+-\d+$/);
      expect(event).toMatchObject({ flow: "hello_flow", runId });
    }
  });

  it("a cancel raises run_cancelled", async () => {
    const runId = await client.triggerFlow("hello_flow", "later", { delay: "1h" });
    await client.cancel(runId);
    await expect.poll(() => seen.some((e) => e.runId === runId && e.name === "run_cancelled"), { timeout: 10_000 }).toBe(true);
  });

  it("GET /api/events replays the events after an id, then streams new ones live", async () => {
    const first = await client.triggerFlow("hello_flow", "sse-1");
    await client.waitForRun(first, { timeout: "20s" });
    await expect.poll(() => seen.some((e) => e.runId === first && e.name === "run_succeeded"), { timeout: 10_000 }).toBe(true);
    const before = seen.find((e) => e.runId === first && e.name === "run_started")!;

    let second = "";
    const streamed = readSse(`${runtime.url}/api/events?after=${before.id}`, (events) =>
      events.some((e) => e.data.runId === second && e.data.name === "run_succeeded"),
    );
    await sleep(300);
    second = await client.triggerFlow("hello_flow", "sse-2");
    const events = await streamed;
    const names = (runId: string) => events.filter((e) => e.data.runId === runId).map((e) => e.data.name);
    // Replayed: everything after run_started of the first run, not run_started itself.
    expect(names(first)).toEqual(["task_started", "task_succeeded", "task_started", "task_succeeded", "run_succeeded"]);
    expect(names(second)).toContain("run_succeeded");
    for (const e of events) expect(e.id).toBe(e.data.id);
    const ids = events.map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);

    const bad = await fetch(`${runtime.url}/api/events?after=yesterday`);
    expect(bad.status).toBe(400);
    // The same id as a header is checked the same way, not taken as "after everything".
    const badHeader = await fetch(`${runtime.url}/api/events`, { headers: { "last-event-id": "99999999999999999999999-0" } });
    expect(badHeader.status).toBe(400);
    expect(await badHeader.json()).toEqual({
      error: "BadRequest",
      message: "Last-Event-ID: is past the largest event id (each part fits in 64 bits)",
    });
  });
});
