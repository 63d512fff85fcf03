import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, type Client, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { runAx } from "../helpers/processes.js";
import { testRuntime } from "../helpers/runtime.js";
import { startWebhookSink, validSignature, type Received } from "../helpers/webhook-sink.js";

/** The runtime.yaml files of this file's tests, removed with it. */
const dir = mkdtempSync(join(tmpdir(), "ax-alerts-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SECRET = "s3cret-for-tests";

class ChargeDeclinedError extends Error {
  override name = "ChargeDeclinedError";
}

const charge = ax.task({ name: "alert_charge", retries: 2, retryBackoff: "50ms" }, (input: { fail: boolean; n: number }) => {
  if (input.fail) throw new ChargeDeclinedError(`card ${input.n} declined at attempt ${ax.context().attempt}`);
  return "charged";
});
const chargeFlow = ax.flow({ name: "alert_charge_flow" }, (input) => charge(input));

const burst = ax.task({ name: "alert_burst", alertGroup: "burst" }, (n: number) => {
  throw new Error(`upstream 503 for item ${n}`);
});
const burstFlow = ax.flow({ name: "alert_burst_flow" }, (input) => burst(input));

const slowTask = ax.task({ name: "alert_slow" }, async (ms: number) => {
  await sleep(ms);
  return ms;
});
const slowFlow = ax.flow({ name: "alert_slow_flow" }, (input) => slowTask(input));

const stuckTask = ax.task({ name: "alert_stuck" }, async (ms: number) => {
  await sleep(ms);
  return ms;
});
const stuckFlow = ax.flow({ name: "alert_stuck_flow" }, (input) => stuckTask(input));

const streakTask = ax.task({ name: "alert_streak", alertGroup: "streak" }, (n: number) => {
  throw new Error(`nightly import ${n} found no file`);
});
const streakFlow = ax.flow({ name: "alert_streak_flow" }, (input) => streakTask(input));

const flows = [chargeFlow, burstFlow, slowFlow, stuckFlow, streakFlow];

function configYaml(url: string): string {
  return [
    "alerts:",
    "  default:",
    // A try that times out is sent again: the whole suite on two cores once held the loop past 2 s, and the sink got one alert twice.
    `    sinks: [{ type: webhook, url: "${url}/default", secret: ${SECRET}, timeout: 10s, retries: 2, retry_backoff: 100ms }]`,
    "    silence: 1h",
    "  burst:",
    `    sinks: [{ type: webhook, url: "${url}/burst", secret: ${SECRET} }, { type: log, level: warn }]`,
    "    silence: 1h",
    "    triggers: { recovery: false }",
    "  slow:",
    `    sinks: [{ type: webhook, url: "${url}/slow", secret: ${SECRET} }]`,
    "    flows: [alert_slow_flow]",
    "    triggers: { slow_run: 300ms, terminal_failure: false }",
    // The same flow in a second group: its alerts reach both, each group in its own silence window.
    "  slow_too:",
    `    sinks: [{ type: webhook, url: "${url}/slow_too", secret: ${SECRET} }]`,
    "    flows: [alert_slow_flow]",
    "    silence: 1h",
    "    triggers: { slow_run: 300ms, terminal_failure: false }",
    "  stuck:",
    `    sinks: [{ type: webhook, url: "${url}/stuck", secret: ${SECRET} }]`,
    "    flows: [alert_stuck_flow]",
    "    silence: 1h",
    "    triggers: { stuck_running: 1s }",
    "  streak:",
    `    sinks: [{ type: webhook, url: "${url}/streak", secret: ${SECRET} }]`,
    "    triggers: { terminal_failure: false, consecutive_failures: 3 }",
    "",
  ].join("\n");
}

describe("alerts: terminal failures only, one per silence window across coordinators, slow and stuck runs", () => {
  const env = isolate("alerts");
  const runtimes: Runtime[] = [];
  let client: Client;
  let sink: Awaited<ReturnType<typeof startWebhookSink>>;

  const at = (path: string, kind?: string): Received[] =>
    sink.received.filter((r) => r.path === path && (kind === undefined || r.json.kind === kind));

  beforeAll(async () => {
    sink = await startWebhookSink();
    const file = join(dir, "runtime.yaml");
    writeFileSync(file, configYaml(sink.url.replace(/\/hook$/, "")));
    // Two coordinators (each also a worker) share the event stream's consumer group and the dedupe rows.
    for (let i = 0; i < 2; i++) {
      const runtime = testRuntime(env, { flows, config: file, maxConcurrency: 20, alerts: { stuckScanMs: 300 } });
      await runtime.start();
      runtimes.push(runtime);
    }
    client = runtimes[0]!.client();
  }, 30_000);

  afterAll(async () => {
    await Promise.all(runtimes.map((r) => r.stop()));
    await sink?.close();
    await env.cleanup();
  });

  it("a task failing 3 times then finally: exactly one webhook, signed, and a recovery notice counting what was held back after its next success", async () => {
    const run = await client.waitForRun(await client.triggerFlow("alert_charge_flow", { fail: true, n: 4242 }), { timeout: "20s" });
    expect(run.status).toBe("failed");
    expect(run.tasks[0]!.attempts).toHaveLength(3);
    await expect.poll(() => at("/default", "task_failed").length, { timeout: 10_000 }).toBe(1);
    await sleep(1500);
    const [alert] = at("/default", "task_failed");
    expect(at("/default", "task_failed")).toHaveLength(1);
    expect(validSignature(alert!, SECRET)).toBe(true);
    expect(validSignature({ ...alert!, body: `${alert!.body} ` }, SECRET)).toBe(false);
    expect(alert!.json).toMatchObject({
      kind: "task_failed",
      group: "default",
      flow: "alert_charge_flow",
      task: "alert_charge",
      runId: run.id,
      attempt: 3,
      error: { name: "ChargeDeclinedError", message: "card 4242 declined at attempt 3" },
      fingerprint: "ChargeDeclinedError: card <n> declined at attempt <n>",
    });

    // The same failure again within the window is held back; the recovery notice counts it.
    const held = await client.waitForRun(await client.triggerFlow("alert_charge_flow", { fail: true, n: 4343 }), { timeout: "20s" });
    expect(held.status).toBe("failed");
    const ok = await client.waitForRun(await client.triggerFlow("alert_charge_flow", { fail: false, n: 1 }), { timeout: "20s" });
    expect(ok.status).toBe("success");
    await expect.poll(() => at("/default", "recovered").length, { timeout: 10_000 }).toBe(1);
    expect(at("/default", "task_failed")).toHaveLength(1);
    expect(at("/default", "recovered")[0]!.json).toMatchObject({
      flow: "alert_charge_flow",
      task: "alert_charge",
      details: { failures: 2 },
      suppressed: 1,
    });

    // The recovery closed the incident: a new failure within the hour's silence alerts again.
    const again = await client.waitForRun(await client.triggerFlow("alert_charge_flow", { fail: true, n: 7 }), { timeout: "20s" });
    expect(again.status).toBe("failed");
    await expect.poll(() => at("/default", "task_failed").length, { timeout: 10_000 }).toBe(2);
    expect(at("/default", "task_failed")[1]!.json).toMatchObject({ runId: again.id, suppressed: 0 });

    // Flapping (a backfill over good and bad dates): one recovery per window, and the failures
    // after a held-back recovery stay silent instead of alerting at every turn.
    for (const fail of [false, true, false, true]) {
      const flap = await client.waitForRun(await client.triggerFlow("alert_charge_flow", { fail, n: 9 }), { timeout: "20s" });
      expect(flap.status).toBe(fail ? "failed" : "success");
    }
    await sleep(1500);
    expect(at("/default", "recovered")).toHaveLength(1);
    expect(at("/default", "task_failed")).toHaveLength(2);
  });

  it("20 failures of the same task within the silence window, two coordinator Runtimes: one alert", async () => {
    const ids = await Promise.all(Array.from({ length: 20 }, (_, i) => client.triggerFlow("alert_burst_flow", i)));
    for (const id of ids) expect((await client.waitForRun(id, { timeout: "20s" })).status).toBe("failed");
    await expect.poll(() => at("/burst").length, { timeout: 10_000 }).toBe(1);
    // Every event evaluated (by either coordinator) before counting: 1 sent + 19 silenced.
    const outcomes = async () => {
      const totals: Record<string, number> = {};
      for (const runtime of runtimes) {
        const metric = await runtime.registry.getSingleMetric("ax_alert_deliveries_total")!.get();
        for (const v of metric.values) {
          const key = `${v.labels.sink}:${v.labels.outcome}`;
          totals[key] = (totals[key] ?? 0) + v.value;
        }
      }
      return totals;
    };
    await expect.poll(async () => (await outcomes())["-:silenced"] ?? 0, { timeout: 10_000 }).toBeGreaterThanOrEqual(19);
    await sleep(1000);
    expect(at("/burst")).toHaveLength(1);
    expect(at("/burst")[0]!.json).toMatchObject({ kind: "task_failed", group: "burst", task: "alert_burst", suppressed: 0 });
    expect(at("/burst")[0]!.json.fingerprint).toBe("Error: upstream <n> for item <n>");
    // The history keeps the one sent, with each sink's answer; the silenced ones are counted, not kept.
    type Logged = { id: number; group: string; kind: string; alert: { task: string }; deliveries: { sink: string; ok: boolean }[] };
    const api = testRuntime(env, { flows, roles: ["api"], port: 0 });
    await api.start();
    try {
      const history = (await (await fetch(`${api.url}/api/alerts?limit=100`)).json()) as { alerts: Logged[] };
      const burst = history.alerts.filter((a) => a.group === "burst");
      expect(burst).toHaveLength(1);
      expect(burst[0]).toMatchObject({ kind: "task_failed", alert: { task: "alert_burst" } });
      expect(burst[0]!.deliveries.map((d) => [d.sink, d.ok])).toEqual([
        ["webhook", true],
        ["log", true],
      ]);
      // The Client and the CLI list the same history.
      const listed = await client.listAlerts({ limit: 100 });
      expect(listed.map((a) => a.id)).toEqual(history.alerts.map((a) => a.id));
      const id = listed.find((a) => a.group === "burst")!.id;
      const page = await runAx([
        "--storage",
        env.storage,
        "--prefix",
        env.prefix,
        "alerts",
        "history",
        "--limit",
        "1",
        "--before",
        String(id + 1),
      ]);
      expect(page.stdout.split("\n")).toEqual([
        expect.stringMatching(
          new RegExp(`^#${id}  \\S+  group burst  task_failed  alert_burst_flow/alert_burst failed .*  \\[webhook ok, log ok\\]$`),
        ),
        `older: ax alerts history --before ${id}`,
        "",
      ]);
    } finally {
      await api.stop();
    }
    console.log("alert deliveries by sink:outcome across both coordinators:", JSON.stringify(await outcomes()));
  });

  it("a successful run slower than the threshold raises a slow-run alert in each group listing its flow; a quick one does not", async () => {
    const quick = await client.waitForRun(await client.triggerFlow("alert_slow_flow", 10), { timeout: "20s" });
    const slow = await client.waitForRun(await client.triggerFlow("alert_slow_flow", 700), { timeout: "20s" });
    expect([quick.status, slow.status]).toEqual(["success", "success"]);
    await expect.poll(() => at("/slow", "slow_run").length, { timeout: 10_000 }).toBe(1);
    await expect.poll(() => at("/slow_too", "slow_run").length, { timeout: 10_000 }).toBe(1);
    await sleep(1000);
    expect(at("/slow")).toHaveLength(1);
    expect(at("/slow_too")).toHaveLength(1);
    expect(at("/slow_too")[0]!.json).toMatchObject({ group: "slow_too", runId: slow.id });
    const alert = at("/slow")[0]!;
    expect(validSignature(alert, SECRET)).toBe(true);
    expect(alert.json).toMatchObject({ runId: slow.id, flow: "alert_slow_flow", details: { outcome: "succeeded", thresholdMs: 300 } });
    expect((alert.json.details as { durationMs: number }).durationMs).toBeGreaterThan(700);
  });

  it("a run still running past the threshold raises one stuck-running alert; only a newly stuck run counts as held back", async () => {
    const suppressed = async () =>
      (await env.sql<{ suppressed: number }>("select suppressed from alert_dedupe where kind = 'stuck_running'"))[0]!.suppressed;
    const runId = await client.triggerFlow("alert_stuck_flow", 3000);
    await expect.poll(() => at("/stuck", "stuck_running").length, { timeout: 10_000 }).toBe(1);
    expect(at("/stuck")[0]!.json).toMatchObject({ flow: "alert_stuck_flow", runId, details: { thresholdMs: 1000 } });
    // Each scan (every 300 ms, on each of two coordinators) finds the same run again: no alert held
    // back, also from the coordinator that first sees it after the other alerted.
    await sleep(1000);
    expect(await suppressed()).toBe(0);
    const later = await client.triggerFlow("alert_stuck_flow", 2500);
    await expect.poll(suppressed, { timeout: 10_000 }).toBe(1);
    await sleep(1000);
    expect(await suppressed()).toBe(1);
    for (const id of [runId, later]) expect((await client.waitForRun(id, { timeout: "20s" })).status).toBe("success");
    expect(at("/stuck")).toHaveLength(1);
  });

  it("N consecutive terminal failures of a task raise one alert, at the Nth", async () => {
    for (let i = 0; i < 2; i++) await client.waitForRun(await client.triggerFlow("alert_streak_flow", i), { timeout: "20s" });
    await sleep(1000);
    expect(at("/streak")).toHaveLength(0);
    for (let i = 2; i < 5; i++) await client.waitForRun(await client.triggerFlow("alert_streak_flow", i), { timeout: "20s" });
    await expect.poll(() => at("/streak", "consecutive_failures").length, { timeout: 10_000 }).toBe(1);
    await sleep(1000);
    expect(at("/streak")).toHaveLength(1);
    expect(at("/streak")[0]!.json).toMatchObject({ task: "alert_streak", details: { failures: 3 } });
  });

  it("ax alerts test <group> sends a signed test alert through the group's sinks; an unknown group is refused", async () => {
    const sent = await runAx(["--storage", env.storage, "--prefix", env.prefix, "alerts", "test", "burst"]);
    expect(sent.stderr).toBe("");
    expect(sent.code).toBe(0);
    // The hook's path is often its secret (a Slack hook's): shown as scheme and host only.
    expect(sent.stdout).toMatch(/sent\s+webhook http:\/\/127\.0\.0\.1:\d+\/\[redacted\]/);
    expect(sent.stdout).not.toContain("/burst");
    expect(sent.stdout).toMatch(/sent\s+log/);
    const tests = at("/burst", "test");
    expect(tests).toHaveLength(1);
    expect(validSignature(tests[0]!, SECRET)).toBe(true);

    const unknown = await runAx(["--storage", env.storage, "--prefix", env.prefix, "alerts", "test", "pagers"]);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain('alert group "pagers" is not defined (defined: default, burst, slow, slow_too, stuck, streak)');
  });

  it("a webhook answering 500 is tried retries + 1 times with backoff, then reported failed", async () => {
    const failing = await startWebhookSink();
    failing.setStatus(500);
    try {
      const file = join(dir, "failing.yaml");
      writeFileSync(file, `alerts:\n  pager:\n    sinks: [{ type: webhook, url: "${failing.url}", retries: 2, retry_backoff: 200ms }]\n`);
      const started = Date.now();
      const result = await runAx(["--storage", env.storage, "alerts", "test", "pager", "--config", file]);
      expect(result.code).toBe(1);
      expect(result.stdout).toContain(`FAILED webhook ${failing.url.replace("/hook", "/[redacted]")}`);
      expect(result.stdout).not.toContain("/hook");
      expect(result.stdout).toMatch(/HTTP 500: alert webhook \S+ failed 3 time\(s\)/);
      expect(failing.hits()).toBe(3);
      // 200 ms then 400 ms between the three tries.
      expect(Date.now() - started).toBeGreaterThanOrEqual(600);
      // The FAILED line is the report: no pino error with a stack besides it.
      expect(result.stdout.split("\n").filter(Boolean)).toHaveLength(1);
    } finally {
      await failing.close();
    }
  });

  it("a webhook answering with a redirect is reported failed, naming where it points; the redirect is not followed", async () => {
    const target = await startWebhookSink();
    const redirecting = createServer((_req, res) => {
      res.writeHead(302, { location: target.url });
      res.end();
    });
    await new Promise<void>((resolve) => redirecting.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = redirecting.address() as AddressInfo;
      const file = join(dir, "redirecting.yaml");
      writeFileSync(file, `alerts:\n  pager:\n    sinks: [{ type: webhook, url: "http://127.0.0.1:${port}/old-hook" }]\n`);
      const result = await runAx(["--storage", env.storage, "alerts", "test", "pager", "--config", file]);
      expect(result.code).toBe(1);
      expect(result.stdout).toMatch(
        /HTTP 302, a redirect to http:\/\/127\.0\.0\.1:\d+\/\[redacted\]: set the sink's url to where it points/,
      );
      expect(target.hits()).toBe(0);
    } finally {
      redirecting.close();
      await target.close();
    }
  });

  it("a webhook URL with credentials delivers them as Basic authorization; they are never shown", async () => {
    const guarded = await startWebhookSink();
    try {
      const file = join(dir, "guarded.yaml");
      const url = guarded.url.replace("http://", "http://hook%20user:p%40ss@");
      writeFileSync(file, `alerts:\n  pager:\n    sinks: [{ type: webhook, url: "${url}?apikey=qk999" }]\n`);
      const result = await runAx(["--storage", env.storage, "alerts", "test", "pager", "--config", file]);
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/sent\s+webhook http:\/\/\[redacted\]@127\.0\.0\.1:\d+\/\[redacted\]/);
      expect(result.stdout + result.stderr).not.toMatch(/p%40ss|qk999|hook%20user/);
      expect(guarded.received).toHaveLength(1);
      expect(guarded.received[0]!.path).toBe("/hook?apikey=qk999");
      expect(guarded.received[0]!.headers.authorization).toBe(`Basic ${Buffer.from("hook user:p@ss").toString("base64")}`);
    } finally {
      await guarded.close();
    }
  });

  it("a webhook signing with a secret_env this process does not set fails, sending nothing unsigned; set, it signs", async () => {
    const hook = await startWebhookSink();
    try {
      const file = join(dir, "signed.yaml");
      writeFileSync(file, `alerts:\n  pager:\n    sinks: [{ type: webhook, url: "${hook.url}", secret_env: AX_TEST_HOOK_SECRET }]\n`);
      const args = ["--storage", env.storage, "alerts", "test", "pager", "--config", file];
      const unset = await runAx(args, { AX_TEST_HOOK_SECRET: "" });
      expect(unset.code).toBe(1);
      expect(unset.stdout).toMatch(
        /FAILED webhook \S+: secret_env AX_TEST_HOOK_SECRET is not set in this process's environment, so .* nothing was sent/,
      );
      expect(hook.received).toHaveLength(0);
      const set = await runAx(args, { AX_TEST_HOOK_SECRET: "from-env" });
      expect(set.code).toBe(0);
      expect(hook.received).toHaveLength(1);
      expect(validSignature(hook.received[0]!, "from-env")).toBe(true);
    } finally {
      await hook.close();
    }
  });

  it("a webhook nobody listens on is reported with the reason, not just `fetch failed`", async () => {
    const gone = await startWebhookSink();
    await gone.close();
    const file = join(dir, "gone.yaml");
    writeFileSync(file, `alerts:\n  pager:\n    sinks: [{ type: webhook, url: "${gone.url}", retries: 0 }]\n`);
    const result = await runAx(["--storage", env.storage, "alerts", "test", "pager", "--config", file]);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/FAILED webhook \S+ fetch failed: connect ECONNREFUSED [^:]+:\d+: alert webhook /);
  });
});
