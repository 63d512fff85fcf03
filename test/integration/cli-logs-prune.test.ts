import { userInfo } from "node:os";
import { afterAll, beforeAll, describe, it } from "vitest";
import { ax, type Client, type Runtime } from "ax-scheduler";
import { seedHistory } from "../helpers/history.js";
import { isolate } from "../helpers/isolated.js";
import { runAx } from "../helpers/processes.js";
import { testRuntime } from "../helpers/runtime.js";

const DAY = 86_400_000;

const audit = ax.task({ name: "audit" }, (order: string) => {
  const { log } = ax.context();
  log.info("auditing %s", order);
  log.warn({ reason: "late" }, "order is late");
  return order;
});
const auditFlow = ax.flow({ name: "audit_flow" }, (order) => audit(order));

// Each `ax` start loads ax (about a second of CPU): the commands run concurrently, under a long timeout.
describe.concurrent("ax logs and ax prune", { timeout: 120_000 }, () => {
  const env = isolate("clilogs");
  let runtime: Runtime;
  let client: Client;
  let runId: string;
  const connection = () => ["--storage", env.storage, "--prefix", env.prefix];

  beforeAll(async () => {
    runtime = testRuntime(env, { flows: [auditFlow] });
    await runtime.start();
    client = runtime.client();
    runId = await client.triggerFlow("audit_flow", "ord-9");
    await client.waitForRun(runId, { timeout: "30s" });
    await seedHistory(env, { flow: "audit_flow", runs: 2_500, tag: "old:", newest: new Date(Date.now() - 120 * DAY), logEvery: 1 });
  });

  afterAll(async () => {
    await runtime?.stop();
    await env.cleanup();
  });

  it("ax logs prints the run's lines: time, node#attempt, level, message, fields", async ({ expect }) => {
    // The lines are written shortly after the attempt; --follow waits for the run to end and looks once more.
    const printed = await runAx(["logs", runId, "--follow", ...connection()]);
    expect(printed.stderr).toBe("");
    expect(printed.code).toBe(0);
    const lines = printed.stdout.trim().split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^\d{4}-\d\d-\d\dT\S+Z audit#1 INFO {2}auditing ord-9$/);
    expect(lines[1]).toMatch(/^\S+ audit#1 WARN {2}order is late \{"reason":"late"\}$/);
    const none = await runAx(["logs", runId, "--attempt", "2", ...connection()]);
    expect(none).toEqual({
      code: 0,
      stdout: "",
      stderr: `run ${runId} has no task log lines for attempt 2 (a task writes them with ax.context().log)\n`,
    });
    const unknown = await runAx(["logs", "00000000-0000-4000-8000-000000000000", ...connection()]);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/no run with id 00000000-0000-4000-8000-000000000000/);
  });

  it("ax logs --node with a node the run does not have says so, naming its nodes, instead of printing nothing", async ({ expect }) => {
    const typo = await runAx(["logs", runId, "--node", "nope", ...connection()]);
    expect(typo).toEqual({
      code: 1,
      stdout: "",
      stderr: `AxNodeNotFoundError: run ${runId} has no node "nope"; its nodes: audit. Name one of those, or no node for all of them\n`,
    });
  });

  it("ax prune --dry-run counts; ax prune --archive archives with a progress bar", async ({ expect }) => {
    const dry = await runAx(["prune", "--older-than", "90d", "--dry-run", ...connection()]);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain(
      "would prune 2500 run(s) with their nodes, attempts and 5000 task log line(s), 0 once key(s), 0 schedule tick(s), 0 sent alert(s) older than 90d",
    );
    const pruned = await runAx(["prune", "--older-than", "90d", "--archive", "--batch", "500", ...connection()]);
    expect(pruned.stderr).toBe("");
    expect(pruned.code).toBe(0);
    expect(pruned.stdout).toMatch(/prune \[.*\] 2500\/2500 runs/);
    expect(pruned.stdout).toContain(
      "archived and deleted 2500 run(s) (5000 task log line(s)), 0 once key(s), 0 schedule tick(s), 0 sent alert(s) older than 90d",
    );
    expect(await env.sql("select (select count(*)::int from runs) as live, (select count(*)::int from runs_archive) as archived")).toEqual([
      { live: 1, archived: 2_500 },
    ]);
    // A pruned run is not found, and the message says why that may be and where it went.
    const [archived] = await env.sql<{ id: string }>("select id from runs_archive limit 1");
    const gone = await runAx(["run", archived!.id, ...connection()]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain(`AxRunNotFoundError: no run with id ${archived!.id};`);
    expect(gone.stderr).toContain("finished runs older than the retention, 90 days unless runtime.yaml sets `retention`, are pruned;");
    expect(gone.stderr).toContain("`ax prune --archive` keeps them in runs_archive");
    // Who pruned is kept, as the API keeps its callers' prunes.
    expect(await env.sql("select actor, action, target, detail from audit_log where action = 'history.prune' order by id")).toEqual([
      { actor: `cli:${userInfo().username}`, action: "history.prune", target: null, detail: { runs: 2_500, dryRun: true } },
      { actor: `cli:${userInfo().username}`, action: "history.prune", target: null, detail: { runs: 2_500, archived: true } },
    ]);
    const bad = await runAx(["prune", "--older-than", "5m", ...connection()]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/^AxUsageError: ax prune: --older-than: must be at least 1h/);
  });
});
