import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, AxNodeNotFoundError, AxRunNotFoundError, type Client, type Runtime, type TaskLogs } from "ax-scheduler";
import { inlineChatty, isolatedLoggers, leakyLoggers } from "../fixtures/logging-tasks.js";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

const stdout: Record<string, unknown>[] = [];
const capture = new Writable({
  write(chunk: Buffer, _encoding, done) {
    for (const line of chunk.toString().split("\n").filter(Boolean)) stdout.push(JSON.parse(line) as Record<string, unknown>);
    done();
  },
});

const inlineFlow = ax.flow({ name: "logging_inline_flow", businessKey: (i: { order: string }) => `order-${i.order}` }, (input) =>
  inlineChatty(input),
);

const flaky = ax.task({ name: "flaky_logger", retries: 1, retryBackoff: "20ms" }, () => {
  const { attempt, log } = ax.context();
  log.info(`attempt ${attempt} starting`);
  if (attempt === 1) throw new Error("first attempt fails");
  return "ok";
});
const flakyFlow = ax.flow({ name: "flaky_logger_flow" }, () => flaky());

const flood = ax.task({ name: "flood" }, (input: { lines: number; bytes: number }) => {
  for (let i = 1; i <= input.lines; i++) ax.context().log.info(`line ${i} ${"x".repeat(input.bytes)}`);
});
const floodFlow = ax.flow({ name: "flood_flow" }, (input) => flood(input));

const secretive = ax.task({ name: "secretive_logger" }, () => {
  const log = ax.context().log.child({ token: "child-binding-secret" });
  log.warn({ password: "hunter2", input: { card: "4111 1111 1111 1111" }, deep: { a: { apiKey: "k-123" } }, amount: 5 }, "charging");
  return "ok";
});
const secretiveFlow = ax.flow({ name: "secretive_flow" }, () => secretive());

const quiet = ax.task({ name: "quiet" }, () => 1);
const quietFlow = ax.flow({ name: "quiet_flow" }, () => quiet());

describe("task logs: ax.context().log lines stored per attempt", () => {
  const env = isolate("tlog");
  const quietEnv = isolate("tlogq");
  let runtime: Runtime;
  let client: Client;
  let api: string;

  beforeAll(async () => {
    runtime = testRuntime(env, {
      flows: [inlineFlow, flakyFlow, floodFlow, quietFlow, secretiveFlow, ...isolatedLoggers, ...leakyLoggers],
      roles: ["coordinator", "worker", "api"],
      port: 0,
      logger: pino({ level: "info" }, capture),
      redact: ["input.card"],
    });
    await runtime.start();
    client = runtime.client();
    api = runtime.url!;
  });

  afterAll(async () => {
    await runtime?.stop();
    await env.cleanup();
  });

  /** Lines are written in batches shortly after the attempt: wait for the expected count. */
  async function logsOf(runId: string, count: number): Promise<TaskLogs> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const logs = await client.getLogs(runId);
      if (logs.lines.length >= count || Date.now() > deadline) return logs;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async function run(flow: string, payload: unknown): Promise<string> {
    const info = await client.waitForRun(await client.triggerFlow(flow, payload), { timeout: "30s" });
    expect(info.status).toBe("success");
    return info.id;
  }

  it("stores info lines and above even when the process logs only errors; debug only when the logger prints it", async () => {
    const quietRuntime = testRuntime(quietEnv, {
      flows: [inlineFlow],
      logger: pino({ level: "error" }, new Writable({ write: (_c, _e, done) => done() })),
    });
    await quietRuntime.start();
    try {
      const quietClient = quietRuntime.client();
      const info = await quietClient.waitForRun(await quietClient.triggerFlow("logging_inline_flow", { order: "Q" }), { timeout: "30s" });
      const deadline = Date.now() + 10_000;
      let logs = await quietClient.getLogs(info.id);
      while (logs.lines.length < 4 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        logs = await quietClient.getLogs(info.id);
      }
      expect(logs.lines.map((l) => l.level)).toEqual(["info", "warn", "info", "error"]);
    } finally {
      await quietRuntime.stop();
      await quietEnv.cleanup();
    }
  });

  it("stores each line with level, message, fields and child bindings, in order; stdout keeps the pino lines with the attempt's ids", async () => {
    const runId = await run("logging_inline_flow", { order: "A1" });
    const logs = await logsOf(runId, 4);
    expect(logs.truncated).toEqual([]);
    expect(logs.lines.map(({ at: _at, ...line }) => line)).toEqual([
      { node: "chatty_inline", attempt: 1, seq: 1, level: "info", msg: "checking order A1", fields: null },
      { node: "chatty_inline", attempt: 1, seq: 2, level: "warn", msg: "amount looks high", fields: { amount: 99.5, currency: "EUR" } },
      { node: "chatty_inline", attempt: 1, seq: 3, level: "info", msg: "charging card", fields: { step: "charge" } },
      {
        node: "chatty_inline",
        attempt: 1,
        seq: 4,
        level: "error",
        msg: "retrying the charge",
        fields: { err: { name: "Error", message: "card declined once", stack: expect.stringContaining("card declined once") } },
      },
    ]);
    for (const line of logs.lines) expect(new Date(line.at).toISOString()).toBe(line.at);
    const printed = stdout.filter((l) => l.runId === runId && (l.msg === "checking order A1" || l.msg === "charging card"));
    expect(printed).toHaveLength(2);
    for (const line of printed) {
      expect(line).toMatchObject({ runId, flow: "logging_inline_flow", node: "chatty_inline", attempt: 1, businessKey: "order-A1" });
    }
  });

  it("stores a line's fields censored: the default paths, the Runtime's redact paths and secret-looking keys at any depth", async () => {
    const runId = await run("secretive_flow", null);
    const [line] = (await logsOf(runId, 1)).lines;
    expect(line).toMatchObject({
      msg: "charging",
      fields: {
        token: "[redacted]",
        password: "[redacted]",
        input: { card: "[redacted]" },
        deep: { a: { apiKey: "[redacted]" } },
        amount: 5,
      },
    });
    const raw = await env.sql<{ fields: unknown }>("select fields from attempt_logs where run_id = $1", [runId]);
    expect(JSON.stringify(raw)).not.toMatch(/hunter2|4111|k-123|child-binding-secret/);
  });

  it.each(["thread", "process"])("a %s executor forwards its lines to the parent, which stores them", async (executor) => {
    const runId = await run(`logging_${executor}_flow`, { order: "B2" });
    const logs = await logsOf(runId, 4);
    expect(logs.lines.map((l) => [l.seq, l.level, l.msg, l.fields])).toEqual([
      [1, "info", "checking order B2", null],
      [2, "warn", "amount looks high", { amount: 99.5, currency: "EUR" }],
      [3, "info", "charging card", { step: "charge" }],
      [4, "error", "retrying the charge", { err: expect.objectContaining({ message: "card declined once" }) }],
    ]);
    expect(new Set(logs.lines.map((l) => l.node))).toEqual(new Set([`chatty_${executor}`]));
  });

  it.each(["thread", "process"])(
    "a reused %s child drops the lines and beats of work an earlier attempt left running",
    async (executor) => {
      const first = await run(`leaky_${executor}_flow`, { leak: true });
      const second = await run(`leaky_${executor}_flow`, { leak: false });
      await logsOf(second, 1);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect((await client.getLogs(second)).lines.map((l) => l.msg)).toEqual(["second run's own line"]);
      expect((await client.getRun(second)).tasks[0]!.progress).toBeNull();
      expect((await client.getLogs(first)).lines.map((l) => l.msg)).toEqual(["first run's own line"]);
    },
  );

  it("keeps each attempt's lines apart; node, attempt and after narrow the answer", async () => {
    const runId = await run("flaky_logger_flow", {});
    const logs = await logsOf(runId, 2);
    expect(logs.lines.map((l) => [l.node, l.attempt, l.seq, l.msg])).toEqual([
      ["flaky_logger", 1, 1, "attempt 1 starting"],
      ["flaky_logger", 2, 1, "attempt 2 starting"],
    ]);
    expect((await client.getLogs(runId, { node: "flaky_logger", attempt: 2 })).lines.map((l) => l.msg)).toEqual(["attempt 2 starting"]);
    expect((await client.getLogs(runId, { node: "flaky_logger", attempt: 3 })).lines).toEqual([]);
    expect((await client.getLogs(runId, { attempt: 1, after: 1 })).lines).toEqual([]);
  });

  it("bounds an attempt at 500 lines and ends with one note saying how many were dropped", async () => {
    const runId = await run("flood_flow", { lines: 620, bytes: 10 });
    const logs = await logsOf(runId, 501);
    expect(logs.lines).toHaveLength(501);
    expect(logs.lines[499]!.msg).toMatch(/^line 500 /);
    expect(logs.lines[500]).toMatchObject({
      seq: 501,
      level: "warn",
      msg: expect.stringMatching(/^120 more line\(s\) dropped: task logs keep 500 lines \/ 64 KiB/),
    });
    expect(logs.truncated).toEqual([{ node: "flood", attempt: 1 }]);
  });

  it("bounds an attempt at 64 KiB", async () => {
    const runId = await run("flood_flow", { lines: 100, bytes: 1000 });
    const logs = await logsOf(runId, 65);
    const stored = logs.lines.filter((l) => l.msg.startsWith("line "));
    expect(stored.length).toBeGreaterThan(60);
    expect(stored.reduce((sum, l) => sum + Buffer.byteLength(l.msg), 0)).toBeLessThanOrEqual(64 * 1024);
    expect(logs.lines.at(-1)!.msg).toMatch(new RegExp(`^${100 - stored.length} more line\\(s\\) dropped`));
    expect(logs.truncated).toEqual([{ node: "flood", attempt: 1 }]);
  });

  it("stores nothing for a task that never logs", async () => {
    const runId = await run("quiet_flow", {});
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await client.getLogs(runId)).toEqual({ lines: [], truncated: [] });
    expect(await env.sql("select count(*)::int as n from attempt_logs where run_id = $1", [runId])).toEqual([{ n: 0 }]);
  });

  it("GET /api/runs/:id/logs answers the agreed shape; 404 for an unknown run, 400 for a bad query", async () => {
    const runId = await run("flaky_logger_flow", {});
    await logsOf(runId, 2);
    const answer = await fetch(`${api}/api/runs/${runId}/logs?node=flaky_logger&attempt=2&after=0`);
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({
      lines: [{ node: "flaky_logger", attempt: 2, seq: 1, at: expect.any(String), level: "info", msg: "attempt 2 starting", fields: null }],
      truncated: [],
    });
    const unknown = await fetch(`${api}/api/runs/00000000-0000-4000-8000-000000000000/logs`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: "AxRunNotFoundError" });
    expect((await fetch(`${api}/api/runs/not-a-uuid/logs`)).status).toBe(404);
    const bad = await fetch(`${api}/api/runs/${runId}/logs?attempt=zero`);
    expect(bad.status).toBe(400);
    await expect(client.getLogs("00000000-0000-4000-8000-000000000000")).rejects.toBeInstanceOf(AxRunNotFoundError);
  });

  it("GET /api/runs/:id/logs?node= and client.getLogs refuse a node the run does not have, naming its nodes; a quiet one answers no lines", async () => {
    const flaky = await run("flaky_logger_flow", {});
    const typo = await fetch(`${api}/api/runs/${flaky}/logs?node=flaky_loger`);
    const message = `run ${flaky} has no node "flaky_loger"; its nodes: flaky_logger. Name one of those, or no node for all of them`;
    expect(typo.status).toBe(404);
    expect(await typo.json()).toEqual({ error: "AxNodeNotFoundError", message });
    // The direct path refuses it the same way, rather than answering "no lines".
    const direct = client.getLogs(flaky, { node: "flaky_loger" });
    await expect(direct).rejects.toBeInstanceOf(AxNodeNotFoundError);
    await expect(direct).rejects.toMatchObject({ runId: flaky, nodeKey: "flaky_loger", message });
    // Past the last line of a node that exists: empty, not a 404 (what a console following the log asks).
    await logsOf(flaky, 2);
    const past = await fetch(`${api}/api/runs/${flaky}/logs?node=flaky_logger&attempt=2&after=1`);
    expect(past.status).toBe(200);
    expect(await past.json()).toEqual({ lines: [], truncated: [] });
    const quietRun = await run("quiet_flow", {});
    const silent = await fetch(`${api}/api/runs/${quietRun}/logs?node=quiet`);
    expect(silent.status).toBe(200);
    expect(await silent.json()).toEqual({ lines: [], truncated: [] });
  });
});
