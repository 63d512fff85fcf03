import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { freePort, runAx as runAxAs, startAx } from "../helpers/processes.js";
import { testRuntime } from "../helpers/runtime.js";

const greet = ax.task({ name: "hello_greet", retries: 1 }, (name: string) => `hello ${name}`);
const measure = ax.task({ name: "hello_measure" }, (text: string) => text.length);
const helloFlow = ax.flow({ name: "hello_flow" }, (name) => measure(greet(name)));

/** Every config command here runs as the user erin, whom stored versions name as their author (erin@host). */
const runAx = (args: string[]) => runAxAs(args, { USER: "erin" });

describe("ax config and the /api/config routes", { timeout: 120_000 }, () => {
  const env = isolate("clicfg");
  const devEnv = isolate("clicfgdev");
  const dir = mkdtempSync(join(tmpdir(), "ax-config-"));
  let runtime: Runtime;
  const connection = () => ["--storage", env.storage, "--prefix", env.prefix];

  beforeAll(async () => {
    runtime = testRuntime(env, { flows: [helloFlow], roles: ["coordinator", "worker", "api"], port: 0 });
    await runtime.start();
  });

  afterAll(async () => {
    await runtime?.stop({ timeout: 1 });
    await env.cleanup();
    await devEnv.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it("apply, refuse a bad file, show sources, history, diff, rollback, show --cluster", async () => {
    const good = join(dir, "runtime.yaml");
    writeFileSync(good, "tasks:\n  hello_greet: { retries: 4, timeout: 30s }\n");
    const applied = await runAx([...connection(), "config", "apply", good]);
    expect(applied.stderr).toBe("");
    expect(applied.stdout).toContain(`config v1 stored from ${good} by erin@${hostname()}`);

    const bad = join(dir, "bad.yaml");
    writeFileSync(bad, "tasks:\n  hello_greet:\n    retries: 4\n    timeuot: 30s\n");
    const refused = await runAx([...connection(), "config", "apply", bad, "--author", "frank"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`AxConfigError: ${bad}:4:5: tasks.hello_greet.timeuot: unknown key; did you mean timeout?`);

    writeFileSync(good, "tasks:\n  hello_greet: { retries: 2, timeout: 30s }\n");
    expect((await runAx([...connection(), "config", "apply", good, "--author", "grace"])).stdout).toContain("config v2 stored");

    const shown = await runAx([...connection(), "config", "show", "--task", "hello_greet"]);
    expect(shown.stdout).toContain("config v2 in force");
    expect(shown.stdout).toMatch(/retries\s+2\s+yaml v2/);
    expect(shown.stdout).toMatch(/timeout\s+30s\s+yaml v2/);
    expect(shown.stdout).toMatch(/retry_backoff\s+1s\s+default/);
    // Without a filter: every block's values and sources start in the same columns, an empty map reads (none).
    const all = (await runAx([...connection(), "config", "show"])).stdout.split("\n").filter((line) => line.startsWith("  "));
    expect(all.find((line) => line.trimStart().startsWith("pools "))).toMatch(/^ {2}pools\s+\(none\)\s+default$/);
    const sources = all.map((line) => line.search(/ (yaml v\d+|code|default)$/));
    expect(new Set(sources).size, all.join("\n")).toBe(1);
    const flow = await runAx([...connection(), "config", "show", "--flow", "hello_flow", "--json"]);
    expect(JSON.parse(flow.stdout).flows.hello_flow).toContainEqual({ option: "overlap", value: "skip", source: "default" });

    const history = await runAx([...connection(), "config", "history"]);
    expect(history.stdout.trim().split("\n")).toEqual([
      expect.stringMatching(new RegExp(`^v2  \\S+  grace  ${good}  \\+1 -1$`)),
      expect.stringMatching(new RegExp(`^v1  \\S+  erin@${hostname()}  ${good}  \\+2 -0$`)),
    ]);
    const diff = await runAx([...connection(), "config", "diff", "1", "2"]);
    expect(diff.stdout).toContain("-  hello_greet: { retries: 4, timeout: 30s }\n+  hello_greet: { retries: 2, timeout: 30s }");

    const rollback = await runAx([...connection(), "config", "rollback", "1"]);
    expect(rollback.stdout).toContain("config v3 stored");
    const started = Date.now();
    while (runtime.configVersion !== 3 && Date.now() - started < 5000) await sleep(20);
    expect(runtime.configVersion).toBe(3);

    await sleep(1200);
    const cluster = await runAx([...connection(), "config", "show", "--cluster"]);
    expect(cluster.stdout).toContain("newest stored version: v3");
    expect(cluster.stdout).toMatch(
      new RegExp(
        `${runtime.workerId}  pid \\d+  queues default\\.hello_greet,default\\.hello_measure  v3  live  roles coordinator,worker,api\n`,
      ),
    );
    const json = JSON.parse((await runAx([...connection(), "config", "show", "--cluster", "--json"])).stdout) as {
      version: number;
      processes: { id: string; roles: string[]; configVersion: number; live: boolean }[];
    };
    expect(json.version).toBe(3);
    expect(json.processes).toContainEqual(
      expect.objectContaining({ id: runtime.processId, roles: ["coordinator", "worker", "api"], configVersion: 3, live: true }),
    );
  });

  it("check: what apply would do, storing nothing; a bad file is refused as apply refuses it", async () => {
    const history = async () => (await runAx([...connection(), "config", "history"])).stdout;
    const before = await history();
    const inForce = (await runtime.liveConfig.current())!;
    const file = join(dir, "check.yaml");
    writeFileSync(file, "tasks:\n  hello_greet: { retries: 7, pool: missing_pool }\n");
    const refused = await runAx([...connection(), "config", "check", file]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      `AxConfigError: ${file}:2:30: tasks.hello_greet.pool: pool "missing_pool" is not defined under pools:`,
    );

    writeFileSync(file, "tasks:\n  hello_greet: { retries: 7, concurrency: null }\n");
    const checked = await runAx([...connection(), "config", "check", file]);
    expect(checked.code).toBe(0);
    expect(checked.stdout).toContain(`valid: apply would store ${file} as config v${inForce.version + 1}`);
    expect(checked.stdout).toContain(`+++ (not stored) ${file}`);
    expect(checked.stdout).toContain("+  hello_greet: { retries: 7, concurrency: null }");
    expect(await history()).toBe(before);
    expect(runtime.configVersion).toBe(inForce.version);

    writeFileSync(file, inForce.yaml);
    expect((await runAx([...connection(), "config", "check", file])).stdout).toContain(
      `unchanged: ${file} is config v${inForce.version}, in force; apply would store nothing`,
    );
  });

  it("the API: POST /api/config stores a version, a bad one is a 400 naming line and column, versions list and read back", async () => {
    const base = runtime.url!;
    const post = (body: object) =>
      fetch(`${base}/api/config`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    const badAnswer = await post({ yaml: "tasks:\n  hello_measure: { retries: -2 }\n", author: "api-user" });
    expect(badAnswer.status).toBe(400);
    expect(await badAnswer.json()).toMatchObject({
      error: "AxConfigError",
      file: "api",
      line: 2,
      column: 20,
      key: "tasks.hello_measure.retries",
    });

    const before = ((await (await fetch(`${base}/api/config`)).json()) as { config: { version: number } }).config.version;
    const created = await post({ yaml: "tasks:\n  hello_measure: { retries: 3 }\n", author: "api-user", file: "console" });
    expect(created.status).toBe(201);
    const version = (await created.json()) as { version: number; diff: string };
    expect(version.version).toBe(before + 1);
    expect(((await (await fetch(`${base}/api/config`)).json()) as { config: { version: number } }).config.version).toBe(version.version);
    const listed = (await (await fetch(`${base}/api/config/versions`)).json()) as { versions: { version: number; author: string }[] };
    expect(listed.versions[0]).toMatchObject({ version: version.version, author: "api-user" });
    const one = await fetch(`${base}/api/config/versions/${version.version}`);
    expect(await one.json()).toMatchObject({
      version: version.version,
      file: "console",
      diff: expect.stringContaining("+  hello_measure: { retries: 3 }"),
    });
    expect((await fetch(`${base}/api/config/versions/999`)).status).toBe(404);

    // A webhook's inline secret and headers are stored as written but never shown back.
    const withSecret = await post({
      yaml: 'alerts:\n  default:\n    sinks: [{ type: webhook, url: "https://hooks.example.com/x", secret: "s3cr3t-key", headers: { Authorization: "Bearer hook-123" } }]\n',
      author: "api-user",
    });
    expect(withSecret.status).toBe(201);
    const shownBack = [
      await withSecret.text(),
      await (await fetch(`${base}/api/config`)).text(),
      await (await fetch(`${base}/api/config/versions/${version.version + 1}`)).text(),
    ];
    for (const answer of shownBack) {
      expect(answer).not.toMatch(/s3cr3t-key|hook-123/);
      expect(answer).toContain("[redacted]");
    }
  });

  it("ax dev applies config/runtime.yaml on save; a bad save is logged with line and column and changes nothing", async () => {
    const file = join(dir, "dev-runtime.yaml");
    writeFileSync(file, "tasks:\n  hello_greet: { retries: 1 }\n");
    const port = await freePort();
    const dev = startAx(
      [
        "dev",
        "test/fixtures/hello-flow.ts",
        "--config",
        file,
        "--port",
        String(port),
        "--storage",
        devEnv.storage,
        "--prefix",
        devEnv.prefix,
      ],
      { AX_LOG_LEVEL: "info", USER: "erin" },
    );
    try {
      await dev.waitFor(/ax dev started/, 80_000);
      const current = async () =>
        (
          (await (await fetch(`http://127.0.0.1:${port}/api/config`)).json()) as {
            config: { version: number; yaml: string; author: string };
          }
        ).config;
      expect(await current()).toMatchObject({ version: 1, author: `erin@${hostname()}` });

      // Saved the way many editors do: a new file renamed over the old one.
      writeFileSync(`${file}.tmp`, "tasks:\n  hello_greet: { retries: 5 }\n");
      renameSync(`${file}.tmp`, file);
      await dev.waitFor(/config file applied as version 2/, 10_000);
      expect(await current()).toMatchObject({ yaml: expect.stringContaining("retries: 5"), author: `erin@${hostname()} (ax dev)` });

      writeFileSync(file, "tasks:\n  hello_greet: { retries: five }\n");
      await dev.waitFor(/dev-runtime\.yaml:2:18: tasks\.hello_greet\.retries: .*the version in force stays/, 10_000);
      expect((await current()).version).toBe(2);
    } finally {
      await dev.stop();
    }
  });

  it("edit opens the version in force in $EDITOR and stores the change on it, keeping the file's comments and masked values", async () => {
    const file = join(dir, "commented.yaml");
    const text = [
      "# greeting retries: see the runbook",
      "alerts:",
      "  ops:",
      "    sinks:",
      '      - { type: webhook, url: "https://hooks.example.com/EDITHOOK" }',
      "tasks:",
      "  hello_greet: { retries: 2, alert_group: ops } # a flaky upstream",
      "",
    ].join("\n");
    writeFileSync(file, text);
    expect((await runAx([...connection(), "config", "apply", file])).code).toBe(0);
    // The "editor": a script that changes the file it is given, as a person would.
    const editor = join(dir, "edit.sh");
    const edits = (sed: string) => writeFileSync(editor, `#!/bin/sh\nsed -i '${sed}' "$1"\n`, { mode: 0o755 });
    const edit = (env: NodeJS.ProcessEnv) => runAxAs([...connection(), "config", "edit"], { USER: "erin", VISUAL: "", ...env });
    const keptIn = (stderr: string) => /(\/\S+)\/runtime-v\d+\.yaml/.exec(stderr)?.[1];

    edits("s/retries: 2/retries: 5/; s/^tasks:/# five since the outage of 12-01\\ntasks:/");
    const edited = await edit({ EDITOR: editor });
    expect(edited).toMatchObject({ code: 0, stderr: "" });
    expect(edited.stdout).toMatch(
      new RegExp(`^config v(\\d+) stored from ax config edit by erin@${hostname()} at \\S+; running processes apply it within seconds\n`),
    );
    const version = Number(/^config v(\d+)/.exec(edited.stdout)![1]);
    const [row] = await env.sql<{ yaml: string }>("select yaml from config_versions where version = $1", [version]);
    expect(row!.yaml).toBe(text.replace("retries: 2", "retries: 5").replace("tasks:", "# five since the outage of 12-01\ntasks:"));

    // An "editor" that only prints the file: it opens with a header saying what happens to the edit.
    const shown = await edit({ EDITOR: "cat" });
    expect(shown).toMatchObject({ code: 0, stderr: "" });
    expect(shown.stdout).toMatch(
      new RegExp(`^# Config v${version}, in force, as the API shows it: secrets masked, the file's comments not shown\\.\n`),
    );
    expect(shown.stdout).toContain("  hello_greet: { retries: 5, alert_group: ops }\n");
    expect(shown.stdout).toContain("https://hooks.example.com/[redacted]");
    expect(shown.stdout).not.toContain("runbook");
    expect(shown.stdout).toMatch(/\nno change: nothing stored\n$/);

    const failed = await edit({ EDITOR: "false" });
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(
      /^AxConfigEditError: the editor \(false\) exited with code 1: nothing was stored; the text is in \S+runtime-v\d+\.yaml\./,
    );
    rmSync(keptIn(failed.stderr)!, { recursive: true, force: true });

    edits("s/retries: 5/retries: lots/");
    const refused = await edit({ EDITOR: editor });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /^ax config edit: nothing was stored; your text is kept in \S+\nAxConfigError: ax config edit:\d+:\d+: tasks\.hello_greet\.retries: /,
    );
    // The refusal's line is the kept file's line: the header is taken off it.
    const keptFile = /kept in (\S+)/.exec(refused.stderr)![1]!;
    const line = Number(/ax config edit:(\d+):\d+/.exec(refused.stderr)![1]);
    expect(readFileSync(keptFile, "utf8").split("\n")[line - 1]).toContain("retries: lots");
    rmSync(keptIn(refused.stderr)!, { recursive: true, force: true });
    const [newest] = await env.sql<{ version: number }>("select max(version)::int as version from config_versions");
    expect(newest!.version).toBe(version);
  });
});
