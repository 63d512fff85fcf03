import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, type Client, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

const lines: Record<string, unknown>[] = [];
const capture = new Writable({
  write(chunk: Buffer, _encoding, done) {
    for (const line of chunk.toString().split("\n").filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
    done();
  },
});

const parse = ax.task({ name: "parse_order" }, (order: { id: string; items: number[] }) => {
  ax.context().log.info({ items: order.items.length }, "parsing the order");
  return { id: order.id, total: order.items.length };
});
const flaky = ax.task({ name: "flaky_report", retries: 1, retryBackoff: "1s", jitter: 0 }, (parsed: { total: number }) => {
  if (ax.context().attempt === 1) throw new Error("report API timed out");
  return parsed.total * 2;
});

const reportFlow = ax.flow({ name: "report_flow", businessKey: (order: { id: string; items: number[] }) => `order-${order.id}` }, (order) =>
  flaky(parse(order)),
);

describe("logs, metrics and the HTTP API of a running cluster", () => {
  const env = isolate("obs");
  let runtime: Runtime;
  let client: Client;

  beforeAll(async () => {
    runtime = testRuntime(env, {
      flows: [reportFlow],
      roles: ["coordinator", "worker", "api"],
      port: 0,
      logger: pino({ level: "info" }, capture),
    });
    await runtime.start();
    client = runtime.client();
  });

  afterAll(async () => {
    await runtime?.stop();
    await env.cleanup();
  });

  it("logs one JSON line per attempt start and end, with ids, business key, sizes, duration and outcome", async () => {
    const run = await client.waitForRun(await client.triggerFlow("report_flow", { id: "42", items: [1, 2, 3] }), { timeout: "20s" });
    expect(run.status).toBe("success");
    expect(run.businessKey).toBe("order-42");
    const ours = lines.filter((l) => l.runId === run.id);
    const started = ours.filter((l) => l.msg === "attempt started");
    const finished = ours.filter((l) => l.msg === "attempt finished");
    expect(started).toHaveLength(3);
    expect(finished).toHaveLength(3);
    const own = ours.filter((l) => l.msg === "parsing the order");
    expect(own).toHaveLength(1);
    for (const line of [...started, ...finished, ...own]) {
      expect(line).toMatchObject({ runId: run.id, flow: "report_flow", businessKey: "order-42", task: line.node });
      expect(typeof line.node).toBe("string");
      expect(typeof line.attempt).toBe("number");
    }
    const failedAttempt = finished.find((l) => l.node === "flaky_report" && l.attempt === 1);
    expect(failedAttempt).toMatchObject({ outcome: "failed", error: { message: "report API timed out" } });
    const parsed = finished.find((l) => l.node === "parse_order");
    expect(parsed).toMatchObject({ outcome: "success", outputBytes: expect.any(Number), summary: '{"id":"42","total":3}' });
    expect(typeof parsed!.durationMs).toBe("number");
    // The payload itself is never logged whole: only its size.
    expect(started.find((l) => l.node === "parse_order")).toMatchObject({ inputBytes: expect.any(Number) });
    expect(JSON.stringify(ours)).not.toContain('"items":[1,2,3]');
  });

  it("serves Prometheus metrics: attempt durations by outcome, queue wait, retries, runs and queue depth", async () => {
    const response = await fetch(`${runtime.url}/metrics`);
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).toMatch(/ax_attempt_duration_seconds_count\{task="flaky_report",outcome="failed"\} 1/);
    expect(text).toMatch(/ax_attempt_duration_seconds_count\{task="flaky_report",outcome="success"\} 1/);
    expect(text).toMatch(/ax_queue_wait_seconds_count\{task="parse_order"\} \d+/);
    // Queue wait runs from when a node is due: the retry's 1 s backoff is not waiting in the queue.
    expect(text).toMatch(/ax_queue_wait_seconds_count\{task="flaky_report"\} 2/);
    const waited = Number(/ax_queue_wait_seconds_sum\{task="flaky_report"\} ([0-9.e-]+)/.exec(text)![1]);
    expect(waited).toBeLessThan(0.5);
    expect(text).toMatch(/ax_retries_total\{task="flaky_report"\} 1/);
    expect(text).toMatch(/ax_runs\{flow="report_flow",status="success"\} 1/);
    // A status no run of the flow is in reads 0 rather than having no series.
    expect(text).toMatch(/ax_runs\{flow="report_flow",status="running"\} 0/);
    // The process's own: memory, CPU, event-loop delay.
    expect(text).toMatch(/^process_resident_memory_bytes \d+/m);
    expect(text).toMatch(/^nodejs_eventloop_lag_p99_seconds /m);
    expect(text).toMatch(/ax_queue_jobs\{queue="default.parse_order",state="waiting"\} 0/);
    expect(text).toMatch(/ax_runs_finished_total\{flow="report_flow",status="success"\} 1/);
  });

  it("answers runs over HTTP: trigger, read, list", async () => {
    const created = await fetch(`${runtime.url}/api/flows/report_flow/runs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ payload: { id: "7", items: [] }, idempotencyKey: "order-7" }),
    });
    expect(created.status).toBe(201);
    const { runId } = (await created.json()) as { runId: string };
    const again = await fetch(`${runtime.url}/api/flows/report_flow/runs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ payload: { id: "7", items: [] }, idempotencyKey: "order-7" }),
    });
    expect(again.status).toBe(200);
    expect(((await again.json()) as { runId: string }).runId).toBe(runId);
    await client.waitForRun(runId, { timeout: "20s" });
    const run = (await (await fetch(`${runtime.url}/api/runs/${runId}`)).json()) as {
      status: string;
      trigger: string;
      tasks: { key: string; upstream: string[] }[];
    };
    expect(run).toMatchObject({ status: "success", trigger: "event" });
    expect(run.tasks.map((t) => [t.key, t.upstream])).toEqual([
      ["parse_order", []],
      ["flaky_report", ["parse_order"]],
    ]);
    const list = (await (await fetch(`${runtime.url}/api/runs?flow=report_flow&status=success`)).json()) as { runs: { id: string }[] };
    expect(list.runs.map((r) => r.id)).toContain(runId);
    const bad = await fetch(`${runtime.url}/api/runs?status=exploded`);
    expect(bad.status).toBe(400);
  });
});
