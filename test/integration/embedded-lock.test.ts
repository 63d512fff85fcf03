import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isolate } from "../helpers/isolated.js";
import { AX_BIN, freePort, REPO_ROOT, runAx, startAx, startChild, TS_FIXTURE, type Child } from "../helpers/processes.js";

const run = promisify(execFile);
const OPEN_EMBEDDED = "test/fixtures/open-embedded.ts";
const UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";

/** A separate OS process; never rejects, reports the exit code. */
async function exec(file: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0", AX_LOG_LEVEL: "error" };
  delete env.DATABASE_URL;
  try {
    const { stdout, stderr } = await run(file, args, { cwd: REPO_ROOT, env, timeout: 240_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number | string; stdout?: string; stderr?: string };
    return { code: typeof e.code === "number" ? e.code : -1, stdout: e.stdout ?? "", stderr: e.stderr ?? String(error) };
  }
}

const ax = (args: string[]) => exec(process.execPath, [AX_BIN, ...args]);

async function openEmbedded(dataDir: string): Promise<{ opened: boolean; runs?: number; name?: string; message?: string }> {
  const result = await exec(process.execPath, [...TS_FIXTURE, OPEN_EMBEDDED, dataDir]);
  const line = result.stdout.trim().split("\n").at(-1) ?? "";
  try {
    return JSON.parse(line) as { opened: boolean };
  } catch {
    throw new Error(`the second opener crashed (exit ${result.code}):\n${result.stdout}\n${result.stderr}`);
  }
}

// Each process here loads ax, and ax dev compiles PGlite: tens of seconds on a busy machine, hence the timeouts.
describe("an embedded data directory held by ax dev", { timeout: 300_000 }, () => {
  // Only the Redis prefix of `isolate()` is used; the history lives in the PGlite directory below.
  const env = isolate("pglock");
  const root = mkdtempSync(join(tmpdir(), "ax-lock-"));
  const dataDir = join(root, "data");
  const connection = ["--data-dir", dataDir, "--prefix", env.prefix];
  let dev: Child;
  let api: string;
  let triggeredRun: string;

  beforeAll(async () => {
    const port = await freePort();
    api = `http://127.0.0.1:${port}`;
    dev = startAx(["dev", "test/fixtures/dev-cli-flows.ts", "--port", String(port), ...connection], {
      AX_LOG_LEVEL: "info",
      DATABASE_URL: undefined,
    });
    // PGlite compiles its WebAssembly and migrates on start: slow on a busy machine.
    await dev.waitFor(/ax dev started/, 230_000);
  }, 240_000);

  afterAll(async () => {
    await dev?.stop();
    await env.cleanup();
    rmSync(root, { recursive: true, force: true });
  });

  it("ax trigger --wait, ax runs and ax run from another process go through its HTTP API", async () => {
    const triggered = await ax(["trigger", "hello_flow", "--payload", '"lock"', "--wait", "--timeout", "120s", ...connection]);
    expect(triggered.stderr).toBe("");
    expect(triggered.code).toBe(0);
    expect(triggered.stdout).toMatch(/hello_flow v1\s+success/);
    const runId = /^run ([0-9a-f-]{36}) /.exec(triggered.stdout)?.[1];
    expect(runId, triggered.stdout).toBeDefined();
    triggeredRun = runId!;

    const [listed, shown, unknown] = await Promise.all([
      ax(["runs", "--flow", "hello_flow", ...connection]),
      ax(["run", runId!, "--json", ...connection]),
      ax(["run", "00000000-0000-4000-8000-000000000000", ...connection]),
    ]);
    expect(listed.stderr).toBe("");
    expect(listed.stdout).toMatch(new RegExp(`^ID\\s+FLOW\\s+VERSION\\s+STATUS.*\\n${runId}\\s+hello_flow\\s+v1\\s+success`));

    expect(shown.code).toBe(0);
    const info = JSON.parse(shown.stdout) as { status: string; trigger: string; tasks: { key: string; result: unknown }[] };
    expect(info.status).toBe("success");
    // Labelled as the direct path (Client) labels it, not as an event posted by a service.
    expect(info.trigger).toBe("manual");
    expect(info.tasks.map((t) => [t.key, t.result])).toEqual([
      ["hello_greet", "hello lock"],
      ["hello_measure", 10],
    ]);

    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/^AxRunNotFoundError: no run with id 00000000-0000-4000-8000-000000000000/);
  });

  it("ax trigger through its HTTP API warns, as the direct path does, of an idempotency key that already made a run with another payload", async () => {
    // The warning is at warn level, the command's default (this file's other commands run at error).
    const trigger = (args: string[]) => runAx(["trigger", ...args, ...connection], { AX_LOG_LEVEL: "warn", DATABASE_URL: undefined });
    const reused = (key: string, flow: string, runId: string) =>
      `ax: idempotency key "${key}" of flow "${flow}" already made run ${runId}, with another payload: that run stands and this payload is not used. If the events differ, give them different keys.\n`;
    const first = await trigger(["hello_flow", "--payload", '"k1"', "--idempotency-key", "lock-k1"]);
    expect(first).toMatchObject({ code: 0, stderr: "" });
    const runId = first.stdout.trim();
    await expect(trigger(["hello_flow", "--payload", '"k1"', "--idempotency-key", "lock-k1"])).resolves.toEqual({
      code: 0,
      stdout: `${runId}\n`,
      stderr: "",
    });
    await expect(trigger(["hello_flow", "--payload", '"k2"', "--idempotency-key", "lock-k1"])).resolves.toEqual({
      code: 0,
      stdout: `${runId}\n`,
      stderr: reused("lock-k1", "hello_flow", runId),
    });
    // A key the flow's code makes on the server: the warning names it all the same.
    const keyedRun = (await trigger(["hello_keyed", "--payload", '{"id":"e1","n":1}'])).stdout.trim();
    await expect(trigger(["hello_keyed", "--payload", '{"id":"e1","n":2}'])).resolves.toEqual({
      code: 0,
      stdout: `${keyedRun}\n`,
      stderr: reused("e1", "hello_keyed", keyedRun),
    });
  });

  it("ax logs --node and ax rerun print the error its API answers, as the direct path prints it", async () => {
    const [typo, rerunFrom] = await Promise.all([
      ax(["logs", triggeredRun, "--node", "nope", ...connection]),
      ax(["rerun", triggeredRun, "--from", "nope", ...connection]),
    ]);
    expect(typo).toEqual({
      code: 1,
      stdout: "",
      stderr: `AxNodeNotFoundError: run ${triggeredRun} has no node "nope"; its nodes: hello_greet, hello_measure. Name one of those, or no node for all of them\n`,
    });
    expect(rerunFrom.code).toBe(1);
    expect(rerunFrom.stderr).toMatch(new RegExp(`^AxUnknownNodeError: run ${triggeredRun} has no node "nope" \\(its nodes: `));
    expect(rerunFrom.stderr).not.toContain("answered by");
  });

  it("ax rerun, backfill, backfills, backfill cancel, schedules, schedule pause|resume, flows, flow retire and queues go through its HTTP API too", async () => {
    const [rerun, backfill, paused] = await Promise.all([
      ax(["rerun", triggeredRun, "--all", "--wait", "--timeout", "120s", ...connection]),
      ax(["backfill", "hello_yearly", "--from", "2024-01-01", "--to", "2026-01-01T00:00:01Z", ...connection]),
      ax(["schedule", "pause", "hello_yearly", ...connection]),
    ]);
    expect(rerun.stderr).toBe("");
    expect(rerun.code).toBe(0);
    expect(rerun.stdout).toMatch(/hello_flow v1\s+success/);
    expect(rerun.stdout).toContain(`rerun of ${triggeredRun}`);

    expect(backfill.stderr).toBe("");
    expect(backfill.code).toBe(0);
    const backfillId = new RegExp(`^backfill (${UUID}): 3 tick\\(s\\) of hello_yearly, 3 new run\\(s\\), at most 10 at a time$`, "m").exec(
      backfill.stdout,
    )?.[1];
    expect(backfillId, backfill.stdout).toBeDefined();
    expect(backfill.stdout).toMatch(/finished: 3 succeeded, 0 failed, 0 cancelled/);

    expect(paused).toMatchObject({ code: 0, stderr: "", stdout: "schedule of hello_yearly paused\n" });

    const [schedules, schedulesJson, backfills, queues, unknownBackfill, retire, flowsListed] = await Promise.all([
      ax(["schedules", ...connection]),
      ax(["schedules", "--json", ...connection]),
      ax(["backfills", "--limit", "5", ...connection]),
      ax(["queues", ...connection]),
      ax(["backfill", "cancel", "00000000-0000-4000-8000-000000000000", ...connection]),
      ax(["flow", "retire", "hello_yearly", ...connection]),
      ax(["flows", ...connection]),
    ]);
    expect(flowsListed.stderr).toBe("");
    expect(flowsListed.stdout).toMatch(/\nhello_yearly +v1 +1 +1 process +\S+ +0 +in use\n/);
    // The ax dev holding the directory defines the flow: its API refuses, saying so.
    expect(retire.code).not.toBe(0);
    expect(retire.stderr).toMatch(/^AxFlowInUseError: flow "hello_yearly" cannot be retired: the code of 1 live process\(es\) defines it/);
    expect(schedules.stderr).toBe("");
    expect(schedules.stdout).toMatch(/^hello_yearly {2}cron "0 0 1 1 \*" {2}zone UTC {2}PAUSED {2}overlap skip {2}catch-up none\n/);
    expect(schedules.stdout).toMatch(/\n {2}next if resumed \(UTC\): (\d{4}-01-01 00:00:00 \+00:00(, |\n)){3}/);
    expect(schedules.stdout).toMatch(/\n {2}last tick: never\n?$/);
    const [listed] = JSON.parse(schedulesJson.stdout) as { flow: string; paused: boolean; nextFireTimes: string[]; updatedAt: string }[];
    expect(listed).toMatchObject({ flow: "hello_yearly", paused: true });
    expect(listed!.nextFireTimes).toHaveLength(3);
    expect(listed!.updatedAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);

    expect(backfills.stderr).toBe("");
    expect(backfills.stdout).toMatch(
      new RegExp(
        `^${backfillId}  hello_yearly  finished   3/3 done  0 failed  0 cancelled  0 running  2024-01-01T00:00:00\\.000Z -> 2026-01-01T00:00:01\\.000Z\n$`,
      ),
    );
    const cancelled = await ax(["backfill", "cancel", backfillId!, ...connection]);
    expect(cancelled).toMatchObject({ code: 0, stderr: "" });
    // Finished before the cancel: nothing to cancel, and said so.
    expect(cancelled.stdout).toBe(`backfill ${backfillId} is finished: nothing to cancel (its failed ticks can still be retried)\n`);
    expect(queues.stderr).toBe("");
    expect(queues.stdout).toContain("hello_greet");
    expect(unknownBackfill.code).not.toBe(0);
    expect(unknownBackfill.stderr).toMatch(/^AxBackfillNotFoundError: no backfill with id 00000000-0000-4000-8000-000000000000/);

    const resumed = await ax(["schedule", "resume", "hello_yearly", ...connection]);
    expect(resumed).toMatchObject({ code: 0, stderr: "", stdout: "schedule of hello_yearly resumed\n" });
  });

  it("GET /api/backfills takes ?limit= (1 to 500), and ax backfills --limit passes it through, past the default 50", async () => {
    // One tick whose run an earlier backfill made: a backfill of no new run, quick to create 55 times.
    for (let i = 0; i < 55; i++) {
      const created = await fetch(`${api}/api/flows/hello_yearly/backfills`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ from: "2024-01-01T00:00:00Z", to: "2024-01-01T00:00:01Z" }),
      });
      expect(created.status).toBe(201);
    }
    const page = async (query: string) => {
      const answer = await fetch(`${api}/api/backfills${query}`);
      return { status: answer.status, body: (await answer.json()) as { backfills?: unknown[]; error?: string; message?: string } };
    };
    expect((await page("")).body.backfills).toHaveLength(50);
    expect((await page("?limit=3")).body.backfills).toHaveLength(3);
    expect((await page("?limit=500")).body.backfills).toHaveLength(56);
    for (const bad of ["0", "501", "2.5", "many"]) {
      const refused = await page(`?limit=${bad}`);
      expect(refused.status, bad).toBe(400);
      expect(refused.body.error).toBe("BadRequest");
      expect(refused.body.message).toMatch(/^limit: must be (a whole number from 1 to 500|at most 500)/);
    }

    const listed = await ax(["backfills", "--limit", "60", ...connection]);
    expect(listed.stderr).toBe("");
    expect(listed.stdout.trim().split("\n")).toHaveLength(56);
  });

  it("ax config apply, check, show, history, diff, rollback and edit go through its HTTP API too, printing what the direct path prints", async () => {
    const first = join(root, "runtime.yaml");
    const second = join(root, "second.yaml");
    const bad = join(root, "bad.yaml");
    // A group for the alerts commands of the next test.
    const alerts = "alerts:\n  ops:\n    sinks:\n      - { type: log }\n";
    writeFileSync(first, `${alerts}tasks:\n  hello_greet: { retries: 4 }\n`);
    writeFileSync(second, `${alerts}tasks:\n  hello_greet: { retries: 2 }\n`);
    writeFileSync(bad, "tasks:\n  hello_greet:\n    retries: 4\n    timeuot: 30s\n");
    const applied = await ax(["config", "apply", first, "--author", "dora", ...connection]);
    expect(applied).toMatchObject({ code: 0, stderr: "" });
    expect(applied.stdout).toMatch(
      new RegExp(`^config v1 stored from ${first} by dora at \\S+; running processes apply it within seconds\n`),
    );
    expect(applied.stdout).toContain("+  hello_greet: { retries: 4 }");

    const [checked, refused, shown] = await Promise.all([
      ax(["config", "check", second, ...connection]),
      ax(["config", "apply", bad, ...connection]),
      ax(["config", "show", "--task", "hello_greet", ...connection]),
    ]);
    expect(checked).toMatchObject({ code: 0, stderr: "" });
    expect(checked.stdout).toContain(`valid: apply would store ${second} as config v2`);
    expect(checked.stdout).toContain("+  hello_greet: { retries: 2 }");
    expect(refused).toMatchObject({ code: 1, stdout: "" });
    expect(refused.stderr).toContain(`AxConfigError: ${bad}:4:5: tasks.hello_greet.timeuot: unknown key; did you mean timeout?`);
    expect(shown).toMatchObject({ code: 0, stderr: "" });
    expect(shown.stdout).toMatch(/^config v1 in force\ntask hello_greet\n/);
    expect(shown.stdout).toMatch(/retries\s+4\s+yaml v1/);

    expect((await ax(["config", "apply", second, "--author", "dora", ...connection])).stdout).toMatch(/^config v2 stored/);
    const [rolled, diff] = await Promise.all([
      ax(["config", "rollback", "1", "--author", "emil", ...connection]),
      ax(["config", "diff", "1", "2", ...connection]),
    ]);
    expect(rolled).toMatchObject({ code: 0, stderr: "" });
    expect(rolled.stdout).toMatch(new RegExp(`^config v3 stored from ${first} by emil at \\S+ \\(the text of v1\\)`));
    expect(diff.stdout).toMatch(/- {2}hello_greet: \{ retries: 4 \}\n\+ {2}hello_greet: \{ retries: 2 \}/);
    const [history, cluster] = await Promise.all([
      ax(["config", "history", "--limit", "2", ...connection]),
      ax(["config", "show", "--cluster", ...connection]),
    ]);
    expect(history.stdout).toMatch(new RegExp(`^v3  \\S+  emil  ${first}  \\+1 -1\nv2  \\S+  dora  ${second}  \\+1 -1\n$`));
    expect(cluster.stdout).toMatch(/^newest stored version: v3\n/);
    expect(cluster.stdout).toContain(`pid ${dev.process.pid}`);

    // ax config edit reads the masked text from its API and sends the edit with its base version.
    const editor = join(root, "edit.sh");
    writeFileSync(editor, `#!/bin/sh\nsed -i 's/retries: 4/retries: 6/' "$1"\n`, { mode: 0o755 });
    const edited = await runAx(["config", "edit", "--author", "dora", ...connection], {
      EDITOR: editor,
      VISUAL: "",
      DATABASE_URL: undefined,
    });
    expect(edited).toMatchObject({ code: 0, stderr: "" });
    expect(edited.stdout).toMatch(/^config v4 stored from ax config edit by dora at \S+; running processes apply it within seconds\n/);
    expect(edited.stdout).toContain("+  hello_greet: { retries: 6 }");
  });

  it("ax audit and ax alerts test, mute, mutes, unmute and history go through its HTTP API too, recorded as its API records callers", async () => {
    const muted = await ax(["alerts", "mute", "ops", "--for", "2h", "--reason", "known", ...connection]);
    expect(muted).toMatchObject({ code: 0, stderr: "" });
    // ax dev checks no token: its API records the caller as anonymous, not as cli:<os user>.
    expect(muted.stdout).toMatch(/^mute (\d+) {2}group ops \(every flow\) {2}until \S+ {2}by anonymous {2}"known"\n$/);
    const id = /^mute (\d+)/.exec(muted.stdout)![1]!;
    const [mutes, history, audit, unknownGroup, tested] = await Promise.all([
      ax(["alerts", "mutes", ...connection]),
      ax(["alerts", "history", ...connection]),
      ax(["audit", "--action", "config", ...connection]),
      ax(["alerts", "mute", "pagers", "--for", "1h", ...connection]),
      ax(["alerts", "test", "ops", ...connection]),
    ]);
    // ax dev sends it with the group's sinks; its log sink writes to ax dev's log, not here.
    expect(tested).toEqual({ code: 0, stdout: "sent   log log\n", stderr: "" });
    await dev.waitFor(/alert: test alert of group ops \(ax alerts test\)/, 10_000);
    expect(mutes).toMatchObject({ code: 0, stderr: "" });
    expect(mutes.stdout).toMatch(new RegExp(`^mute ${id} {2}group ops \\(every flow\\) {2}until `));
    expect(history).toEqual({ code: 0, stdout: "no alerts sent\n", stderr: "" });
    expect(audit).toMatchObject({ code: 0, stderr: "" });
    const actions = audit.stdout
      .trim()
      .split("\n")
      .map((line) => line.split(/\s{2,}/).slice(2, 5));
    expect(actions).toEqual([
      ["anonymous", "config.apply", "4"],
      ["anonymous", "config.rollback", "3"],
      ["anonymous", "config.apply", "2"],
      ["anonymous", "config.apply", "1"],
    ]);
    expect(unknownGroup.code).toBe(1);
    expect(unknownGroup.stderr).toMatch(/^AxAlertGroupNotFoundError: alert group "pagers" is not defined \(defined: ops\)/);

    const unmuted = await ax(["alerts", "unmute", id, ...connection]);
    expect(unmuted).toEqual({
      code: 0,
      stdout: `mute ${id} ended: alerts of group ops (every flow) are sent again, unless another mute covers them\n`,
      stderr: "",
    });
  });

  it("ax prune --dry-run and ax prune go through its HTTP API too, recorded in its audit log", async () => {
    const dry = await ax(["prune", "--older-than", "1h", "--dry-run", ...connection]);
    expect(dry).toEqual({
      code: 0,
      stdout:
        "would prune 0 run(s) with their nodes, attempts and 0 task log line(s), 0 once key(s), 0 schedule tick(s), 0 sent alert(s) older than 1h\n",
      stderr: "",
    });
    const pruned = await ax(["prune", "--older-than", "1h", "--archive", ...connection]);
    expect(pruned).toEqual({
      code: 0,
      stdout: "archived and deleted 0 run(s) (0 task log line(s)), 0 once key(s), 0 schedule tick(s), 0 sent alert(s) older than 1h\n",
      stderr: "",
    });
    const short = await ax(["prune", "--older-than", "30m", ...connection]);
    expect(short.code).toBe(1);
    expect(short.stderr).toMatch(/--older-than: must be at least 1h/);
    const audit = await ax(["audit", "--action", "history", ...connection]);
    expect(audit).toMatchObject({ code: 0, stderr: "" });
    expect(
      audit.stdout
        .trim()
        .split("\n")
        .map((line) => line.split(/\s{2,}/).slice(2, 4)),
    ).toEqual([
      ["anonymous", "history.prune"],
      ["anonymous", "history.prune"],
    ]);
  });

  it("ax token create, list and revoke go through its HTTP API too, recorded as its API records callers", async () => {
    const created = await ax(["token", "create", "--name", "ci-bot", "--scope", "read", "--expires", "30d", ...connection]);
    expect(created.code).toBe(0);
    expect(created.stdout.trim()).toMatch(/^ax_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
    expect(created.stderr).toMatch(/^token "ci-bot" \(scope read, expires \d{4}-\S+\): copy it now, it is not shown again\n$/);
    const [listed, taken] = await Promise.all([
      ax(["token", "list", ...connection]),
      ax(["token", "create", "--name", "ci-bot", "--scope", "admin", ...connection]),
    ]);
    expect(listed).toMatchObject({ code: 0, stderr: "" });
    expect(listed.stdout).toMatch(/^ci-bot\s+read\s+created \d{4}-\S+\s+last used -\s+expires \d{4}-\S+\n$/);
    expect(taken.code).toBe(1);
    expect(taken.stderr).toMatch(/^AxTokenNameError: /);
    expect(await ax(["token", "revoke", "ci-bot", ...connection])).toEqual({ code: 0, stdout: 'token "ci-bot" revoked\n', stderr: "" });
    const unknown = await ax(["token", "revoke", "ci-bot", ...connection]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^AxTokenNameError: /);
    const audit = await ax(["audit", "--action", "token", ...connection]);
    expect(
      audit.stdout
        .trim()
        .split("\n")
        .map((line) => line.split(/\s{2,}/).slice(2, 5)),
    ).toEqual([
      ["anonymous", "token.revoke", "ci-bot"],
      ["anonymous", "token.create", "ci-bot"],
    ]);
  });

  it("a second opener that is not the CLI gets AxDataDirLockedError naming the holder, not a crash", async () => {
    const second = await openEmbedded(dataDir);
    expect(second).toMatchObject({ opened: false, name: "AxDataDirLockedError" });
    expect(second.message).toContain(`in use by process ${dev.process.pid}`);
    expect(second.message).toContain(api);
    expect(second.message).toMatch(/DATABASE_URL/);
    // It says which CLI commands reach the directory through ax dev, and which need it stopped.
    expect(second.message).toContain(
      "the ax CLI goes through its API for trigger, runs, run, cancel, logs, rerun, backfill, backfills, schedules, schedule pause|resume, flow retire, queues, config, audit and alerts",
    );
    expect(second.message).toContain("prune and token work on the directory itself");
    expect(second.message).not.toContain("does so by itself");
  });

  it("once ax dev has stopped the directory is free, and a lock left by a dead process is taken over", async () => {
    await dev.stop();
    expect(dev.process.exitCode).toBe(0);
    expect(existsSync(`${dataDir}.lock`)).toBe(false);

    const gone = await run(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]);
    writeFileSync(
      `${dataDir}.lock`,
      JSON.stringify({ pid: Number(gone.stdout), hostname: hostname(), startedAt: new Date().toISOString() }),
    );
    // The triggered run, the two keyed ones, a rerun and the three backfilled ticks.
    expect(await openEmbedded(dataDir)).toEqual({ opened: true, runs: 7 });
    expect(existsSync(`${dataDir}.lock`)).toBe(false);
  });

  it("ax worker on an embedded history warns that nothing else can reach it", async () => {
    const worker = startAx(["worker", "test/fixtures/dev-cli-flows.ts", ...connection], { AX_LOG_LEVEL: "warn", DATABASE_URL: undefined });
    try {
      await worker.waitFor(/ax worker keeps its history in embedded PGlite, which only this process can open/, 120_000);
      const line = worker
        .output()
        .split("\n")
        .find((l) => l.includes("keeps its history in embedded PGlite"));
      expect(JSON.parse(line!)).toMatchObject({ level: 40, history: dataDir });
      expect(line).toContain("give every process the same PostgreSQL URL (--storage or DATABASE_URL)");
    } finally {
      await worker.stop();
    }
  });

  it("a service's own Runtime with the api role on the history is reached through its API too, as ax dev is", async () => {
    const port = await freePort();
    const service = startChild(process.execPath, [...TS_FIXTURE, "test/fixtures/embedded-runtime.ts", dataDir, String(port), env.prefix], {
      AX_LOG_LEVEL: "warn",
      DATABASE_URL: undefined,
    });
    try {
      await service.waitFor(/embedded runtime started/, 120_000);
      const triggered = await ax(["trigger", "hello_flow", "--payload", '"service"', "--wait", "--timeout", "120s", ...connection]);
      expect(triggered.stderr).toBe("");
      expect(triggered.stdout).toMatch(/hello_flow v1\s+success/);
      const runId = new RegExp(`^run (${UUID}) `).exec(triggered.stdout)?.[1];
      const listed = await ax(["runs", "--flow", "hello_flow", "--json", ...connection]);
      expect(listed.code).toBe(0);
      expect((JSON.parse(listed.stdout) as { id: string }[]).map((r) => r.id)).toContain(runId);
    } finally {
      await service.stop();
    }
  });
});
