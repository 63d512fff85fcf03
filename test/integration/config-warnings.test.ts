import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, Client, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { runAx } from "../helpers/processes.js";
import { testRuntime } from "../helpers/runtime.js";

class GatewayTimeout extends Error {}
class FraudSuspected extends Error {}

const charge = ax.task(
  { name: "cw_charge", retries: 3, retryOn: [GatewayTimeout, "CardDeclined"], noRetryOn: [FraudSuspected] },
  () => null,
);
const notify = ax.task({ name: "cw_notify" }, () => null);
const flow = ax.flow({ name: "cw_flow" }, () => {
  charge();
  notify();
});

const FILE = "config/runtime.yaml";
const MOVED = "tasks:\n  cw_notify: { queue: mail }\n";

describe("warnings when a config version is applied", { timeout: 60_000 }, () => {
  const env = isolate("cfgwarn");
  const dir = mkdtempSync(join(tmpdir(), "ax-cfgwarn-"));
  const runtimes: Runtime[] = [];
  let client: Client;

  beforeAll(async () => {
    // Serves the queues its tasks are in at start: default.cw_charge and default.cw_notify.
    runtimes.push(testRuntime(env, { flows: [flow], roles: ["coordinator", "worker"] }));
    await runtimes[0]!.start();
    client = new Client({ storage: env.storage, redis: env.redis, prefix: env.prefix });
  });

  afterAll(async () => {
    await client?.close();
    await Promise.all(runtimes.map((r) => r.stop({ timeout: 1 })));
    await env.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it("warns of a YAML error list the task's code contradicts, saying which list wins", async () => {
    const applied = await client.config.apply(
      "tasks:\n  cw_charge: { no_retry_on: [GatewayTimeout] }\n  cw_notify: { retries: 1 }\n",
      FILE,
      "qa",
    );
    expect(applied.warnings).toEqual([
      "tasks.cw_charge.no_retry_on: GatewayTimeout is also in the task's retryOn in code; no_retry_on wins, so GatewayTimeout will not be retried. If that is meant, write retry_on here without GatewayTimeout (retry_on: [CardDeclined]); otherwise remove GatewayTimeout from no_retry_on",
    ]);
    const reverse = await client.config.apply("tasks:\n  cw_charge: { retry_on: [FraudSuspected] }\n", FILE, "qa");
    expect(reverse.warnings).toEqual([
      "tasks.cw_charge.retry_on: FraudSuspected is also in the task's noRetryOn in code, which wins, so FraudSuspected will still not be retried. To retry FraudSuspected, write no_retry_on here without FraudSuspected (no_retry_on: []); otherwise remove FraudSuspected from retry_on",
    ]);
    const meant = await client.config.apply("tasks:\n  cw_charge: { retry_on: [FraudSuspected], no_retry_on: [] }\n", FILE, "qa");
    expect(meant.warnings).toEqual([]);
  });

  it("warns, from the API and the CLI, of a task moved to a queue no live worker serves", async () => {
    const applied = await client.config.apply(MOVED, FILE, "qa");
    const unserved =
      'tasks.cw_notify.queue: no live worker runs task "cw_notify" in queue "mail" (live workers run it in default), so its jobs will wait; start a worker with --queues mail (one started before this version keeps the queues its tasks were in then: restart it), or fix the queue name';
    expect(applied.warnings).toEqual([unserved]);
    const file = join(dir, "runtime.yaml");
    writeFileSync(file, MOVED);
    const cli = await runAx(["--storage", env.storage, "--prefix", env.prefix, "config", "apply", file]);
    expect(cli.code).toBe(0);
    expect(cli.stderr).toBe(`warning: ${unserved}\n`);
  });

  it("says nothing once a live worker serves the queue", async () => {
    // Started after the version that moved the task, this worker fetches from mail.cw_notify.
    runtimes.push(testRuntime(env, { flows: [flow], roles: ["worker"], queues: ["mail"] }));
    await runtimes[1]!.start();
    expect((await client.config.apply(MOVED, FILE, "qa")).warnings).toEqual([]);
  });
});
