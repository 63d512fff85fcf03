import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, it } from "vitest";
import { ax, type Client, type Runtime } from "ax-scheduler";
import { isolate, type Isolated } from "../helpers/isolated.js";
import { freePort, runAx, startAx } from "../helpers/processes.js";
import { testRuntime } from "../helpers/runtime.js";

const greet = ax.task({ name: "greet" }, (input: { name: string }) => `hello ${input.name}`);
const shout = ax.task({ name: "shout" }, (text: string) => text.toUpperCase());
const count = ax.task({ name: "count" }, (text: string) => text.length);
const report = ax.task({ name: "report" }, (loud: string, length: number) => ({ loud, length }));
const cliFlow = ax.flow({ name: "cli_flow" }, (input) => {
  const text = greet(input);
  report(shout(text), count(text));
});

const echo = ax.task({ name: "cli_echo" }, (input: { name: string }) => input.name.length);
/** Runs of the other tests' flow are counted; this one's are not. */
const payloadFlow = ax.flow({ name: "cli_payload_flow" }, (input) => {
  echo(input);
});

// Each `ax` start loads ax (about a second of CPU, far more on a busy machine): independent
// commands run concurrently, under a longer timeout than the default.
describe.concurrent("the ax CLI", { timeout: 90_000 }, () => {
  const env = isolate("cli");
  const fresh: Isolated = isolate("climigrate");
  const devEnv: Isolated = isolate("clidev");
  let runtime: Runtime;
  let client: Client;
  const connection = () => ["--storage", env.storage, "--prefix", env.prefix];

  beforeAll(async () => {
    runtime = testRuntime(env, { flows: [cliFlow, payloadFlow] });
    await runtime.start();
    client = runtime.client();
  });

  afterAll(async () => {
    await runtime?.stop();
    await env.cleanup();
    await fresh.cleanup();
    await devEnv.cleanup();
  });

  it("ax dev runs every role in one process: HTTP trigger, the run succeeds, /metrics counts its attempts", async ({ expect }) => {
    const port = await freePort();
    const dev = startAx(
      ["dev", "test/fixtures/hello-flow.ts", "--port", String(port), "--storage", devEnv.storage, "--prefix", devEnv.prefix],
      { AX_LOG_LEVEL: "info" },
    );
    try {
      await dev.waitFor(/ax dev started/, 80_000);
      const base = `http://127.0.0.1:${port}`;
      const created = await fetch(`${base}/api/flows/hello_flow/runs`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ payload: "ax" }),
      });
      expect(created.status).toBe(201);
      const { runId } = (await created.json()) as { runId: string };
      let run: { status: string; tasks: { key: string; result: unknown }[] } | undefined;
      for (let i = 0; i < 200 && run?.status !== "success"; i++) {
        run = (await (await fetch(`${base}/api/runs/${runId}`)).json()) as typeof run;
        if (run?.status !== "success") await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(run?.tasks.map((t) => [t.key, t.result])).toEqual([
        ["hello_greet", "hello ax"],
        ["hello_measure", 8],
      ]);
      const metrics = await (await fetch(`${base}/metrics`)).text();
      expect(metrics).toMatch(/ax_attempts_total\{task="hello_measure",outcome="success"\} 1/);
    } finally {
      await dev.stop();
    }
    expect(dev.process.exitCode).toBe(0);
  });

  it("ax trigger --wait prints the DAG with states and exits 0; ax runs --flow lists the run", async ({ expect }) => {
    const triggered = await runAx([
      "trigger",
      "cli_flow",
      "--payload",
      '{"name":"ada"}',
      "--business-key",
      "cli-order-7",
      "--wait",
      "--timeout",
      "30s",
      ...connection(),
    ]);
    expect(triggered.stderr).toBe("");
    expect(triggered.code).toBe(0);
    const runId = /^run ([0-9a-f-]{36}) /.exec(triggered.stdout)?.[1];
    expect(runId, triggered.stdout).toBeDefined();
    expect(triggered.stdout).toMatch(/cli_flow v1\s+success/);
    expect(triggered.stdout).toContain("business key cli-order-7");
    expect(triggered.stdout).toMatch(/greet\s+success\s+1 attempt/);
    expect(triggered.stdout).toMatch(/shout\s+success\s+1 attempt .*<- greet/);
    expect(triggered.stdout).toMatch(/count\s+success\s+1 attempt .*<- greet/);
    expect(triggered.stdout).toMatch(/report\s+success\s+1 attempt .*<- shout, count/);

    const run = await client.getRun(runId!);
    expect(run.status).toBe("success");
    expect(run.tasks.find((t) => t.key === "report")?.result).toEqual({ loud: "HELLO ADA", length: 9 });

    const listed = await runAx(["runs", "--flow", "cli_flow", ...connection()]);
    expect(listed.code).toBe(0);
    const [header, ...lines] = listed.stdout.trim().split("\n");
    expect(header).toMatch(/^ID\s+FLOW\s+VERSION\s+STATUS\s+TRIGGER\s+CREATED\s+BUSINESS KEY$/);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^${runId}\\s+cli_flow\\s+v1\\s+success\\s+manual\\s+\\S+\\s+cli-order-7$`));
    // Columns line up under the header whatever the flow name's length.
    for (const [column, cell] of [
      ["FLOW", "cli_flow"],
      ["VERSION", "v1"],
      ["STATUS", "success"],
      ["TRIGGER", "manual"],
      ["BUSINESS KEY", "cli-order-7"],
    ] as const)
      expect(lines[0]!.indexOf(cell)).toBe(header!.indexOf(column));
    const byTrigger = async (trigger: string) =>
      (await runAx(["runs", "--flow", "cli_flow", "--trigger", trigger, ...connection()])).stdout;
    expect(await byTrigger("manual")).toContain(runId!);
    expect(await byTrigger("event")).toBe("");
    expect((await runAx(["runs", "--flow", "cli_flow", "--trigger", "event", ...connection()])).stderr).toBe("no runs match\n");

    // Times as a Client answers them (ISO strings) go back in as they are; from is inclusive, to exclusive.
    expect((await client.listRuns({ flow: "cli_flow", from: run.createdAt })).map((r) => r.id)).toEqual([runId]);
    expect(await client.listRuns({ flow: "cli_flow", to: run.createdAt })).toEqual([]);
    expect((await client.listRuns({ flow: "cli_flow", from: "2000-01-01", to: new Date(Date.now() + 60_000) })).map((r) => r.id)).toEqual([
      runId,
    ]);
    const byTime = async (...flags: string[]) => (await runAx(["runs", "--flow", "cli_flow", ...flags, ...connection()])).stdout;
    expect(await byTime("--since", "1h")).toContain(runId!);
    expect(await byTime("--from", "2000-01-01", "--to", new Date(Date.now() + 60_000).toISOString())).toContain(runId!);
    expect(await byTime("--from", new Date(Date.now() + 60_000).toISOString())).toBe("");
    const both = await runAx(["runs", "--since", "1h", "--from", "2000-01-01", ...connection()]);
    expect(both.code).not.toBe(0);
    expect(both.stderr).toContain("ax runs: --since and --from both say where the runs start: give one of them");
    const local = await runAx(["runs", "--from", "2026-01-01T02:00", ...connection()]);
    expect(local.stderr).toContain('ax runs: --from: "2026-01-01T02:00" has no UTC offset');
  });

  it("ax trigger refuses a --payload that is not JSON, says so, exits non-zero and writes nothing", async ({ expect }) => {
    const result = await runAx(["trigger", "cli_flow", "--payload", "{name: ada", "--business-key", "bad-payload", ...connection()]);
    expect(result.code).not.toBe(0);
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(/ax trigger: --payload: not JSON \(.+\)/);
    // Checked by business key: the other tests of this file trigger runs concurrently.
    const [row] = await env.sql<{ n: number }>("select count(*)::int as n from runs where business_key = 'bad-payload'");
    expect(row!.n).toBe(0);
  });

  it("ax trigger --payload-file takes a payload too long for a command line; with --payload too it is refused", async ({
    expect,
    onTestFinished,
  }) => {
    const dir = mkdtempSync(join(tmpdir(), "ax-payload-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, "big.json");
    // 1.5 MB of arguments is past what Linux passes to a process (about 128 KiB per argument).
    writeFileSync(file, JSON.stringify({ name: "x".repeat(200_000) }));
    const sent = await runAx(["trigger", "cli_payload_flow", "--payload-file", file, "--business-key", "payload-file", ...connection()]);
    expect(sent.stderr).toBe("");
    expect(sent.code).toBe(0);
    const [row] = await env.sql<{ n: number }>("select length(payload->>'name')::int as n from runs where business_key = 'payload-file'");
    expect(row!.n).toBe(200_000);
    const both = await runAx(["trigger", "cli_payload_flow", "--payload", "{}", "--payload-file", file, ...connection()]);
    expect(both.code).not.toBe(0);
    expect(both.stderr).toContain("ax trigger: give --payload or --payload-file, not both");
  });

  it("ax migrate creates the tables on a fresh schema", async ({ expect }) => {
    const first = await runAx(["migrate", "--storage", fresh.storage]);
    expect(first.stderr).toBe("");
    expect(first).toMatchObject({ code: 0, stdout: `migrations applied (pg, schema ${fresh.schema}, new: it had no ax history)\n` });
    const tables = await fresh.sql<{ table_name: string }>(
      "select table_name from information_schema.tables where table_schema = $1 order by table_name",
      [fresh.schema],
    );
    expect(tables.map((t) => t.table_name)).toEqual(
      expect.arrayContaining(["attempts", "flow_definitions", "idempotency_keys", "node_runs", "runs", "workers"]),
    );
  });
});
