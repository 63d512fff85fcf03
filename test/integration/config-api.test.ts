import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, type Runtime } from "ax-scheduler";
import { seedHistory } from "../helpers/history.js";
import { isolate, PG_URL } from "../helpers/isolated.js";
import { configAppliedOn, testRuntime } from "../helpers/runtime.js";

// `ax config check|diff|rollback|history --limit|show --task` and `ax prune` over HTTP: what the CLI
// uses against an `ax dev` holding an embedded data directory, and what a pipeline without
// PostgreSQL access can call.

const bill = ax.task({ name: "capi_bill" }, (n: number) => n + 1);
const capiFlow = ax.flow({ name: "capi_flow" }, (input) => {
  bill(input);
});

const env = isolate("cfgapi");
let runtime: Runtime;

async function call(method: "GET" | "POST", path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${runtime.url}${path}`, {
    method,
    ...(body === undefined ? {} : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const withSecret = (retries: number, secret: string) =>
  [
    "alerts:",
    "  ops:",
    "    sinks:",
    `      - { type: webhook, url: "https://hooks.example.com/${secret}", secret: "${secret}-signing" }`,
    "tasks:",
    `  capi_bill: { retries: ${retries}, alert_group: ops }`,
    "",
  ].join("\n");

beforeAll(async () => {
  runtime = testRuntime(env, { flows: [capiFlow], roles: ["coordinator", "worker", "api"], port: 0 });
  await runtime.start();
});

afterAll(async () => {
  await runtime?.stop({ timeout: 2 });
  await env.cleanup();
});

describe("the config routes the CLI takes through an ax dev", () => {
  it("check stores nothing and masks secrets on both sides of its diff; a bad file is refused naming its place", async () => {
    const first = await call("POST", "/api/config", { yaml: withSecret(1, "SECRETA"), author: "alice", file: "a.yaml" });
    expect(first).toMatchObject({ status: 201, body: { version: 1, unchanged: false } });

    const checked = await call("POST", "/api/config/check", { yaml: withSecret(2, "SECRETB"), file: "b.yaml" });
    expect(checked.status).toBe(200);
    expect(checked.body).toMatchObject({ inForce: 1, unchanged: false, warnings: [] });
    expect(checked.body.diff).toContain("+  capi_bill: { retries: 2, alert_group: ops }");
    expect(checked.body.diff).toContain("(not stored) b.yaml");
    expect(checked.body.diff).not.toMatch(/SECRET[AB]/);
    expect((await call("GET", "/api/config/versions")).body.versions).toHaveLength(1);

    // The text the API shows, sent back as it is, would store the masks in place of the secrets.
    const shown = ((await call("GET", "/api/config")).body.config as { yaml: string }).yaml;
    const roundTrip = await call("POST", "/api/config", { yaml: shown, author: "alice", file: "shown.yaml" });
    expect(roundTrip).toMatchObject({ status: 400, body: { error: "AxConfigError", key: "alerts.ops.sinks.0.url" } });
    expect(String(roundTrip.body.message).split("\n")).toHaveLength(2);
    expect(String(roundTrip.body.message)).toContain('alerts.ops.sinks.0.secret: is "[redacted]", the mask the API and the console show');

    const same = await call("POST", "/api/config/check", { yaml: withSecret(1, "SECRETA") });
    expect(same.body).toMatchObject({ inForce: 1, unchanged: true });

    const bad = await call("POST", "/api/config/check", { yaml: "tasks:\n  capi_bill: { retries: lots }\n", file: "bad.yaml" });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ error: "AxConfigError", file: "bad.yaml", line: 2, key: "tasks.capi_bill.retries" });
    const unknown = await call("POST", "/api/config/check", { yaml: "tasks:\n  capi_nope: { retries: 1 }\n" });
    expect(unknown).toMatchObject({ status: 400, body: { error: "AxConfigError", file: "api" } });
    expect(String(unknown.body.message)).toMatch(/capi_nope/);
  });

  it("diff masks secrets, rollback stores the old text as a new version every process applies, and history takes a limit", async () => {
    const second = await call("POST", "/api/config", { yaml: withSecret(3, "SECRETC"), author: "bob", file: "c.yaml" });
    expect(second).toMatchObject({ status: 201, body: { version: 2 } });

    const diff = await call("GET", "/api/config/diff?from=1&to=2");
    expect(diff.status).toBe(200);
    expect(diff.body.diff).toContain("-  capi_bill: { retries: 1, alert_group: ops }");
    expect(diff.body.diff).toContain("+  capi_bill: { retries: 3, alert_group: ops }");
    expect(diff.body.diff).not.toMatch(/SECRET[AC]/);
    expect(await call("GET", "/api/config/diff?from=1&to=9")).toMatchObject({
      status: 404,
      body: { error: "AxConfigVersionNotFoundError" },
    });
    expect(await call("GET", "/api/config/diff?from=0&to=1")).toMatchObject({ status: 400, body: { error: "BadRequest" } });

    const rolled = await call("POST", "/api/config/rollback", { version: 1, author: "carol" });
    expect(rolled).toMatchObject({ status: 201, body: { version: 3, author: "carol", file: "a.yaml", unchanged: false, warnings: [] } });
    expect(rolled.body.yaml).not.toContain("SECRETA");
    await configAppliedOn([runtime], 3);
    const effective = await call("GET", "/api/config/effective?task=capi_bill");
    expect(Object.keys(effective.body.tasks as object)).toEqual(["capi_bill"]);
    expect(effective.body.flows).toEqual({});
    expect((effective.body.tasks as Record<string, { option: string; value: unknown; source: string }[]>).capi_bill).toContainEqual({
      option: "retries",
      value: 1,
      source: "yaml v3",
    });
    const again = await call("POST", "/api/config/rollback", { version: 1, author: "carol" });
    expect(again).toMatchObject({ status: 200, body: { version: 3, unchanged: true } });
    expect(await call("POST", "/api/config/rollback", { version: 7, author: "carol" })).toMatchObject({
      status: 404,
      body: { error: "AxConfigVersionNotFoundError" },
    });

    const history = await call("GET", "/api/config/versions?limit=2");
    expect((history.body.versions as { version: number }[]).map((v) => v.version)).toEqual([3, 2]);
    expect((await call("GET", "/api/config/versions?limit=0")).status).toBe(400);
    // A misspelt parameter is refused by name, not ignored.
    expect(await call("GET", "/api/config/diff?from=1&too=2")).toMatchObject({ status: 400, body: { error: "BadRequest" } });
    const typo = await call("GET", "/api/config/effective?tsak=capi_bill");
    expect(typo).toMatchObject({ status: 400, body: { message: 'query: unknown parameter "tsak"; this route takes task, flow' } });

    const audit = await call("GET", "/api/audit");
    const actions = (audit.body.entries as { action: string; target: string }[]).map((e) => `${e.action} ${e.target}`);
    // The rollback that stored nothing is audited too: the call succeeded.
    expect(actions.filter((a) => a.startsWith("config."))).toEqual([
      "config.rollback 3",
      "config.rollback 3",
      "config.apply 2",
      "config.apply 1",
    ]);
  });

  it("POST /api/alerts/test sends through the sinks of the version in force and answers what each said, keeping their secrets", async () => {
    const received: { url: string; body: string }[] = [];
    const receiver = createServer((request, response) => {
      let body = "";
      request.on("data", (chunk: Buffer) => {
        body += chunk.toString();
      });
      request.on("end", () => {
        received.push({ url: request.url ?? "", body });
        response.writeHead(request.url === "/down" ? 503 : 200).end();
      });
    });
    receiver.listen(0, "127.0.0.1");
    await once(receiver, "listening");
    const base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    try {
      const yaml = [
        "alerts:",
        "  ops:",
        "    sinks:",
        `      - { type: webhook, url: "${base}/hook?token=HOOKSECRET", retries: 0 }`,
        `      - { type: webhook, url: "${base}/down", retries: 0 }`,
        "      - { type: log }",
        "tasks:",
        "  capi_bill: { retries: 1, alert_group: ops }",
        "",
      ].join("\n");
      expect((await call("POST", "/api/config", { yaml, author: "dana" })).status).toBe(201);
      const tested = await call("POST", "/api/alerts/test", { group: "ops" });
      expect(tested.status).toBe(200);
      expect(tested.body.group).toBe("ops");
      const results = tested.body.results as { sink: string; target: string; ok: boolean; error?: string }[];
      expect(results.map((r) => [r.sink, r.ok])).toEqual([
        ["webhook", true],
        ["webhook", false],
        ["log", true],
      ]);
      expect(JSON.stringify(results)).not.toContain("HOOKSECRET");
      expect(results[1]!.error).toMatch(/503/);
      expect(received.map((r) => r.url)).toEqual(["/hook?token=HOOKSECRET", "/down"]);
      expect(JSON.parse(received[0]!.body)).toMatchObject({ kind: "test", group: "ops" });

      expect(await call("POST", "/api/alerts/test", { group: "pagers" })).toMatchObject({
        status: 404,
        body: { error: "AxAlertGroupNotFoundError", message: expect.stringContaining("(defined: ops)") },
      });
      const audit = (await call("GET", "/api/audit?action=alerts")).body.entries as { action: string; target: string }[];
      expect(audit.map((e) => [e.action, e.target])).toEqual([["alerts.test", "ops"]]);
    } finally {
      receiver.close();
    }
  });

  it("effective narrowed to a task or flow nobody defined is refused in words", async () => {
    const task = await call("GET", "/api/config/effective?task=capi_nope");
    expect(task).toMatchObject({ status: 400, body: { error: "AxConfigError" } });
    expect(String(task.body.message)).toContain('unknown task "capi_nope"');
    expect(await call("GET", "/api/config/effective?flow=capi_nope")).toMatchObject({ status: 404, body: { error: "AxUnknownFlowError" } });
    const flow = await call("GET", "/api/config/effective?flow=capi_flow");
    expect(Object.keys(flow.body.flows as object)).toEqual(["capi_flow"]);
    expect(flow.body.tasks).toEqual({});
  });

  it("an edit of the text the API shows, sent with its base version, keeps the file's comments and secrets; a stale base is refused", async () => {
    const file = [
      "# Billing's alerts: ask #payments before changing the webhook.",
      "alerts:",
      "  ops:",
      "    sinks:",
      "      - type: webhook",
      '        url: "https://hooks.example.com/T00/EDITSECRET" # the payments channel',
      "        secret: EDITSIGNING",
      "tasks:",
      "  capi_bill: { retries: 1, alert_group: ops } # the invoice API dedupes",
      "",
    ].join("\n");
    const stored = await call("POST", "/api/config", { yaml: file, author: "erin", file: "runtime.yaml" });
    expect(stored.status).toBe(201);
    const base = stored.body.version as number;
    const shown = ((await call("GET", "/api/config")).body.config as { yaml: string; version: number }).yaml;
    expect(shown).not.toMatch(/EDITSECRET|EDITSIGNING|#/);
    const edited = shown.replace("retries: 1", "retries: 2");

    const checked = await call("POST", "/api/config/check", { yaml: edited, file: "console", base });
    expect(checked).toMatchObject({ status: 200, body: { inForce: base, unchanged: false, warnings: [] } });
    const changed = String(checked.body.diff)
      .split("\n")
      .filter((line) => /^[-+] /.test(line));
    expect(changed).toEqual(["-  capi_bill: { retries: 1, alert_group: ops }", "+  capi_bill: { retries: 2, alert_group: ops }"]);
    expect(await call("POST", "/api/config/check", { yaml: shown, base })).toMatchObject({ status: 200, body: { unchanged: true } });
    // A refusal names the place in the text as sent, not in the stored text (whose comment lines it never saw).
    const invalid = await call("POST", "/api/config/check", { yaml: shown.replace("retries: 1", "retries: lots"), file: "console", base });
    const line = shown.split("\n").findIndex((l) => l.includes("capi_bill")) + 1;
    expect(invalid).toMatchObject({ status: 400, body: { error: "AxConfigError", key: "tasks.capi_bill.retries", line } });
    expect(invalid.body.message).toMatch(new RegExp(`^console:${line}:\\d+: tasks\\.capi_bill\\.retries: `));

    const applied = await call("POST", "/api/config", { yaml: edited, author: "erin", file: "console", base });
    expect(applied).toMatchObject({ status: 201, body: { version: base + 1, unchanged: false } });
    const [row] = await env.sql<{ yaml: string }>("select yaml from config_versions where version = $1", [base + 1]);
    expect(row!.yaml).toBe(file.replace("retries: 1", "retries: 2"));

    // Made on the version before: storing it would undo the one stored since.
    const stale = await call("POST", "/api/config", { yaml: edited.replace("retries: 1", "retries: 5"), author: "finn", base });
    expect(stale).toMatchObject({ status: 409, body: { error: "AxConfigConflictError" } });
    expect(stale.body.message).toBe(
      `this edit was made on config v${base}, but v${base + 1} has been stored since: nothing was stored. Open the version in force (v${base + 1}) again and make the change on it`,
    );
    expect(await call("POST", "/api/config/check", { yaml: edited, base })).toMatchObject({ status: 409 });
    expect(await call("POST", "/api/config", { yaml: edited, author: "finn", base: 0 })).toMatchObject({
      status: 400,
      body: { error: "BadRequest" },
    });
    expect((await call("GET", "/api/config")).body.config).toMatchObject({ version: base + 1 });

    // Comments written in the edit are added where they were written; the stored ones stay.
    const commented = edited.replace("tasks:\n", "# two retries since the outage\ntasks:\n");
    const withComment = await call("POST", "/api/config", { yaml: commented, author: "erin", file: "console", base: base + 1 });
    expect(withComment).toMatchObject({ status: 201, body: { version: base + 2, unchanged: false } });
    const [commentedRow] = await env.sql<{ yaml: string }>("select yaml from config_versions where version = $1", [base + 2]);
    expect(commentedRow!.yaml).toBe(
      file.replace("retries: 1", "retries: 2").replace("tasks:\n", "# two retries since the outage\ntasks:\n"),
    );

    // A stored text with an anchor is not patched value by value: the edit is stored as sent, and the answer says so.
    const anchored = await call("POST", "/api/config", { yaml: "# shared\ntasks:\n  capi_bill: &bill { retries: 3 }\n", author: "erin" });
    const v = anchored.body.version as number;
    const shownAnchored = ((await call("GET", "/api/config")).body.config as { yaml: string }).yaml;
    const sent = shownAnchored.replace("retries: 3", "retries: 4");
    const plain = await call("POST", "/api/config", { yaml: sent, author: "erin", base: v });
    expect(plain).toMatchObject({ status: 201, body: { version: v + 1 } });
    expect(plain.body.warnings).toEqual([
      `this edit could not be made on config v${v}'s stored text value by value (YAML anchors, aliases or keys that are not plain names keep it from that): it is stored as written, and v${v}'s comments are not kept`,
    ]);
    const [plainRow] = await env.sql<{ yaml: string }>("select yaml from config_versions where version = $1", [v + 1]);
    expect(plainRow!.yaml).toBe(sent);
  });
});

describe("the prune route the CLI takes through an ax dev", () => {
  const DAY = 86_400_000;

  it("counts on a dry run, then prunes (archiving) what is older, and records who did", async () => {
    await seedHistory(env, { flow: "capi_flow", runs: 300, tag: "old:", newest: new Date(Date.now() - 100 * DAY), logEvery: 1 });
    await seedHistory(env, { flow: "capi_flow", runs: 5, tag: "new:", newest: new Date(Date.now() - DAY) });
    const dry = await call("POST", "/api/history/prune", { olderThan: "90d", dryRun: true });
    expect(dry).toEqual({ status: 200, body: { runs: 300, logLines: 600, onceKeys: 0, scheduleTicks: 0, alerts: 0, dryRun: true } });
    expect(await env.sql("select count(*)::int as n from runs where idempotency_key like 'old:%'")).toEqual([{ n: 300 }]);

    const pruned = await call("POST", "/api/history/prune", { olderThan: "90d", archive: true, batch: 100 });
    expect(pruned).toEqual({ status: 200, body: { runs: 300, logLines: 600, onceKeys: 0, scheduleTicks: 0, alerts: 0, archived: true } });
    expect(await env.sql("select count(*)::int as n from runs where idempotency_key like 'old:%'")).toEqual([{ n: 0 }]);
    expect(await env.sql("select count(*)::int as n from runs_archive")).toEqual([{ n: 300 }]);
    expect(await env.sql("select count(*)::int as n from runs where idempotency_key like 'new:%'")).toEqual([{ n: 5 }]);

    const audit = await env.sql<{ action: string; detail: unknown }>(
      "select action, detail from audit_log where action = 'history.prune' order by id",
    );
    expect(audit).toEqual([
      { action: "history.prune", detail: { runs: 300, dryRun: true } },
      { action: "history.prune", detail: { runs: 300, archived: true } },
    ]);
  });

  it("refuses a period under 1h or not a duration, a misspelt key, and a second prune while one runs", async () => {
    const short = await call("POST", "/api/history/prune", { olderThan: "10m" });
    expect(short).toMatchObject({ status: 400, body: { error: "AxRetentionError" } });
    expect(short.body.message).toMatch(/retention: olderThan: must be at least 1h/);
    const vague = await call("POST", "/api/history/prune", { olderThan: "soon" });
    expect(vague).toMatchObject({ status: 400, body: { error: "AxRetentionError" } });
    const typo = await call("POST", "/api/history/prune", { olderThan: "90d", dry_run: true });
    expect(typo).toMatchObject({ status: 400, body: { error: "BadRequest" } });
    expect(typo.body.message).toMatch(/unknown key "dry_run"/);

    // A coordinator's hourly pass (or an `ax prune` on the storage) holds the cluster-wide lock.
    const holder = new pg.Client({ connectionString: PG_URL, options: `-c search_path=${env.schema}` });
    await holder.connect();
    try {
      await holder.query("select pg_advisory_lock(hashtext(current_schema() || ':ax.prune'))");
      const busy = await call("POST", "/api/history/prune", { olderThan: "90d" });
      expect(busy).toMatchObject({ status: 409, body: { error: "AxPruneBusyError" } });
    } finally {
      await holder.end();
    }
    expect((await call("POST", "/api/history/prune", { olderThan: "90d" })).status).toBe(200);
  });

  it("a caller that goes away (Ctrl-C in ax prune) stops the prune after its current batch", async () => {
    await seedHistory(env, { flow: "capi_flow", runs: 5_000, tag: "gone:", newest: new Date(Date.now() - 100 * DAY), logEvery: 1_000 });
    const left = async () =>
      (await env.sql<{ n: number }>("select count(*)::int as n from runs where idempotency_key like 'gone:%'"))[0]!.n;
    const caller = new AbortController();
    const pruning = fetch(`${runtime.url}/api/history/prune`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ olderThan: "90d", batch: 20 }),
      signal: caller.signal,
    }).catch((error: Error) => error.name);
    while ((await left()) === 5_000) await new Promise((resolve) => setTimeout(resolve, 10));
    caller.abort();
    expect(await pruning).toBe("AbortError");
    // It stops after its current batch: the rest stays, and the lock is given back for the next call.
    let before = -1;
    let now = await left();
    while (now !== before) {
      before = now;
      await new Promise((resolve) => setTimeout(resolve, 300));
      now = await left();
    }
    expect(now).toBeGreaterThan(0);
    expect((await call("POST", "/api/history/prune", { olderThan: "90d" })).body).toMatchObject({ runs: now });
  });
});
