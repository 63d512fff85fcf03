import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AxConfigError, AxPortInUseError, AxUnknownFlowError, ax, Client, type RunInfo, type Runtime } from "ax-scheduler";
import { flowSettings, insertConfigVersion, latestConfigVersionNumber, openStore } from "@ax/store";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

/** Issue 8: a new version reaches every running process within this, without a restart. */
const APPLY_WITHIN_MS = 5000;
const FILE = "config/runtime.yaml";

// Each task runs on its own queue, served by one of the two Runtimes: its attempts show that Runtime's options.
const failsOnA = ax.task({ name: "fails_on_a", queue: "qa", retryBackoff: 0.05, jitter: 0 }, () => {
  throw new Error("always fails");
});
const failsOnB = ax.task({ name: "fails_on_b", queue: "qb", retryBackoff: 0.05, jitter: 0 }, () => {
  throw new Error("always fails");
});
const flakyA = ax.flow({ name: "flaky_a" }, () => {
  failsOnA();
});
const flakyB = ax.flow({ name: "flaky_b", maxConcurrentRuns: 50 }, () => {
  failsOnB();
});

const retriesYaml = (n: number) => ["tasks:", `  fails_on_a: { retries: ${n} }`, `  fails_on_b: { retries: ${n} }`, ""].join("\n");

describe("live configuration: 2 Runtimes follow stored versions without a restart", () => {
  const env = isolate("livecfg");
  let a: Runtime;
  let b: Runtime;
  let client: Client;
  let store: ReturnType<typeof openStore>;
  const openStoreDb = () => store.db;

  beforeAll(async () => {
    // Each Runtime has its own Redis and PostgreSQL connections, as two processes would.
    a = testRuntime(env, { flows: [flakyA, flakyB], roles: ["coordinator", "worker"], queues: ["qa"] });
    b = testRuntime(env, { flows: [flakyA, flakyB], roles: ["worker"], queues: ["qb"] });
    await a.start();
    await b.start();
    client = new Client({ storage: env.storage, redis: env.redis, prefix: env.prefix });
    store = openStore({ url: env.storage });
  });

  afterAll(async () => {
    await client?.close();
    await store?.close();
    await Promise.all([a?.stop({ timeout: 1 }), b?.stop({ timeout: 1 })]);
    await env.cleanup();
  });

  /** Triggers one run of each flow and answers each run's attempt count. */
  async function attemptsNow(): Promise<{ a: number; b: number; workers: Set<string> }> {
    const [ra, rb] = await Promise.all([client.triggerFlow("flaky_a", null), client.triggerFlow("flaky_b", null)]);
    const runs: RunInfo[] = await Promise.all([client.waitForRun(ra, { timeout: "20s" }), client.waitForRun(rb, { timeout: "20s" })]);
    const workers = new Set(runs.flatMap((r) => r.tasks[0]!.attempts.map((x) => x.worker)));
    return { a: runs[0]!.tasks[0]!.attempts.length, b: runs[1]!.tasks[0]!.attempts.length, workers };
  }

  async function appliedEverywhere(version: number): Promise<number> {
    const started = Date.now();
    while (a.configVersion !== version || b.configVersion !== version) {
      if (Date.now() - started > APPLY_WITHIN_MS) throw new Error(`version ${version} not applied within ${APPLY_WITHIN_MS} ms`);
      await sleep(10);
    }
    return Date.now() - started;
  }

  it("retries 0 -> 2 applies to the next attempts on both processes within 5 s; rollback restores it", async () => {
    expect(await attemptsNow()).toMatchObject({ a: 1, b: 1 });

    const v1 = await client.config.apply(retriesYaml(0), FILE, "alice");
    expect(v1.version).toBe(1);
    await appliedEverywhere(1);
    const v2 = await client.config.apply(retriesYaml(2), FILE, "bob");
    const applyMs = await appliedEverywhere(2);
    console.log(`config v2 applied on both Runtimes ${applyMs} ms after apply returned`);
    const after = await attemptsNow();
    expect(after).toMatchObject({ a: 3, b: 3 });
    expect(after.workers).toEqual(new Set([a.workerId, b.workerId]));
    expect(v2.diff).toContain("-  fails_on_a: { retries: 0 }");
    expect(v2.diff).toContain("+  fails_on_a: { retries: 2 }");

    const v3 = await client.config.rollback(1, "carol");
    expect(v3).toMatchObject({ version: 3, yaml: retriesYaml(0), author: "carol", unchanged: false });
    await appliedEverywhere(3);
    expect(await attemptsNow()).toMatchObject({ a: 1, b: 1 });
    // The text in force again (a save with no change, a second rollback): nothing stored.
    expect(await client.config.apply(retriesYaml(0), FILE, "dave")).toMatchObject({ version: 3, author: "carol", unchanged: true });
    expect(await client.config.rollback(1, "erin")).toMatchObject({ version: 3, unchanged: true });

    const history = await client.config.history();
    expect(history.map((h) => [h.version, h.author, h.added, h.removed])).toEqual([
      [3, "carol", 2, 2],
      [2, "bob", 2, 2],
      [1, "alice", 3, 0],
    ]);
    expect(await client.config.diff(1, 3)).not.toMatch(/^[+-] /m);
    expect(await client.config.diff(2, 2)).toMatch(/^={10,}\n--- v2 .*\n\+\+\+ v2 .*\n$/);
  });

  it("refuses bad YAML naming file, line, column and key; the version in force stays", async () => {
    const before = await latestConfigVersionNumber(openStoreDb());
    const bad: [string, { line: number; column: number; key: string; says: RegExp }][] = [
      [
        "tasks:\n  fails_on_a: { retries: 1 }\n  no_such_task: { retries: 1 }\n",
        { line: 3, column: 3, key: "tasks.no_such_task", says: /unknown task "no_such_task" \(defined: .*fails_on_a/ },
      ],
      ["tasks:\n  fails_on_a:\n    retries: -1\n", { line: 3, column: 5, key: "tasks.fails_on_a.retries", says: /must be at least 0/ }],
      ['flows:\n  flaky_a:\n    schedule: "61 * * * *"\n', { line: 3, column: 5, key: "flows.flaky_a.schedule", says: /minute|61/ }],
      [
        "tasks:\n  fails_on_b: { retrys: 2 }\n",
        { line: 2, column: 17, key: "tasks.fails_on_b.retrys", says: /unknown key; did you mean retries\?$/ },
      ],
      [
        "tasks:\n  fails_on_b: { retries: three }\n",
        { line: 2, column: 17, key: "tasks.fails_on_b.retries", says: /expected a number, got a string/ },
      ],
      [
        "pools: { core_db: 2 }\ntasks:\n  fails_on_b: { pool: other_db }\n",
        { line: 3, column: 17, key: "tasks.fails_on_b.pool", says: /pool "other_db"/ },
      ],
    ];
    for (const [text, expected] of bad) {
      const error = await client.config.apply(text, "config/bad.yaml", "mallory").then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error, text).toBeInstanceOf(AxConfigError);
      const e = error as AxConfigError;
      expect({ file: e.file, line: e.line, column: e.column, key: e.key }, text).toEqual({
        file: "config/bad.yaml",
        line: expected.line,
        column: expected.column,
        key: expected.key,
      });
      expect(e.message).toMatch(
        new RegExp(`^config/bad\\.yaml:${expected.line}:${expected.column}: ${expected.key.replace(/\./g, "\\.")}: `),
      );
      expect(e.message).toMatch(expected.says);
    }
    expect(await latestConfigVersionNumber(openStoreDb())).toBe(before);
    expect([a.configVersion, b.configVersion]).toEqual([before, before]);
  });

  it("shows each option's effective value and source: yaml vN, code, default", async () => {
    const v = await client.config.apply(
      [
        "max_concurrency: 4",
        "pools: { core_db: 3 }",
        "tasks:",
        "  fails_on_a: { retries: 2, pool: core_db }",
        "flows:",
        "  flaky_a: { max_concurrent_runs: 7 }",
        "",
      ].join("\n"),
      FILE,
      "dave",
    );
    const shown = await client.config.effective({ task: "fails_on_a" });
    const option = (name: string) => shown.tasks.fails_on_a!.find((o) => o.option === name);
    expect(option("retries")).toEqual({ option: "retries", value: 2, source: `yaml v${v.version}` });
    expect(option("retry_backoff")).toEqual({ option: "retry_backoff", value: 50, source: "code" });
    expect(option("queue")).toEqual({ option: "queue", value: "qa", source: "code" });
    expect(option("timeout")).toEqual({ option: "timeout", value: null, source: "default" });
    expect(option("pool")).toEqual({ option: "pool", value: { name: "core_db", slots: 1 }, source: `yaml v${v.version}` });
    expect(Object.keys(shown.flows)).toEqual([]);
    expect(shown.cluster).toEqual([
      { option: "max_concurrency", value: 4, source: `yaml v${v.version}` },
      { option: "pools", value: { core_db: 3 }, source: `yaml v${v.version}` },
      { option: "retention", value: 90 * 86_400_000, source: "default" },
    ]);

    const flows = await client.config.effective({ flow: "flaky_b" });
    expect(flows.flows.flaky_b!.find((o) => o.option === "max_concurrent_runs")).toEqual({
      option: "max_concurrent_runs",
      value: 50,
      source: "code",
    });
    await expect(client.config.effective({ task: "nope" })).rejects.toThrow(/unknown task "nope"/);
    await expect(client.config.effective({ flow: "nope" })).rejects.toThrow(AxUnknownFlowError);

    // Flow settings and cluster limits are live too.
    await appliedEverywhere(v.version);
    expect(a.clusterLimits()).toEqual({ maxConcurrency: 4, pools: { core_db: 3 } });
    expect(b.clusterLimits()).toEqual({ maxConcurrency: 4, pools: { core_db: 3 } });
    expect((await flowSettings(openStoreDb(), "flaky_a"))?.maxConcurrentRuns).toBe(7);
  });

  it("a schedule set in YAML starts ticking without a restart, and stops once removed", async () => {
    const scheduledRuns = async () =>
      (await client.listRuns({ flow: "flaky_a", limit: 500 })).filter((r) => r.trigger === "schedule").length;
    const on = await client.config.apply('flows:\n  flaky_a: { schedule: "* * * * * *", overlap: allow }\n', FILE, "ops");
    await appliedEverywhere(on.version);
    const started = Date.now();
    while ((await scheduledRuns()) === 0) {
      if (Date.now() - started > APPLY_WITHIN_MS) throw new Error("no scheduled run within 5 s of the version that added the schedule");
      await sleep(50);
    }
    console.log(`first scheduled run ${Date.now() - started} ms after the schedule was applied`);
    const off = await client.config.apply("flows:\n  flaky_a: { max_concurrent_runs: 7 }\n", FILE, "ops");
    await appliedEverywhere(off.version);
    await sleep(300);
    const settled = await scheduledRuns();
    await sleep(2500);
    expect(await scheduledRuns()).toBe(settled);
  });

  it("the poll applies a version whose message was never published, and each worker reports its version", async () => {
    const started = Date.now();
    const { version } = await insertConfigVersion(openStoreDb(), { yaml: retriesYaml(1), parsed: {}, author: "sql", file: FILE });
    await appliedEverywhere(version);
    console.log(`config v${version} without a message applied by polling after ${Date.now() - started} ms`);
    await sleep(1200);
    const cluster = await client.config.cluster();
    expect(cluster.filter((w) => w.live).map((w) => [w.id, w.configVersion])).toEqual(
      expect.arrayContaining([
        [a.workerId, version],
        [b.workerId, version],
      ]),
    );
    const roles = new Map(cluster.map((p) => [p.id, p.roles]));
    expect(roles.get(a.workerId!)).toEqual(["coordinator", "worker"]);
    expect(roles.get(b.workerId!)).toEqual(["worker"]);
  });

  it("a Runtime started with a config file takes the stored version instead once one exists", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ax-live-"));
    const file = join(dir, "runtime.yaml");
    writeFileSync(file, "max_concurrency: 99\n");
    const newest = await latestConfigVersionNumber(openStoreDb());
    const late = testRuntime(env, { flows: [flakyA, flakyB], roles: ["api"], port: 0, config: file });
    let lateId: string | undefined;
    try {
      await late.start();
      expect(late.configVersion).toBe(newest);
      // A process without the worker role is listed too, so a straggling API or coordinator shows.
      lateId = late.processId;
      expect((await client.config.cluster()).find((p) => p.id === lateId)).toMatchObject({
        roles: ["api"],
        queues: [],
        configVersion: newest,
        concurrency: null,
        live: true,
      });
      expect(late.clusterLimits().maxConcurrency).toBeNull();
      expect(await latestConfigVersionNumber(openStoreDb())).toBe(newest);
    } finally {
      await late.stop({ timeout: 1 });
      rmSync(dir, { recursive: true, force: true });
    }
    expect(lateId).toEqual(expect.any(String));
    expect((await client.config.cluster()).map((p) => p.id)).not.toContain(lateId);
  });

  it("with configFileWins a differing file is stored as a new version every Runtime applies; the same file stores nothing", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ax-live-"));
    const file = join(dir, "runtime.yaml");
    writeFileSync(file, "max_concurrency: 77\n");
    const before = await latestConfigVersionNumber(openStoreDb());
    const starts = (): Runtime =>
      testRuntime(env, { flows: [flakyA, flakyB], roles: ["api"], port: 0, config: file, configFileWins: true });
    const first = starts();
    try {
      await first.start();
      expect(first.configVersion).toBe(before + 1);
      expect(first.clusterLimits().maxConcurrency).toBe(77);
      expect((await client.config.current())?.author).toMatch(/@/);
      // The others hear of it at once, not at their next poll.
      const deadline = Date.now() + APPLY_WITHIN_MS;
      while (a.clusterLimits().maxConcurrency !== 77 && Date.now() < deadline) await sleep(50);
      expect(a.clusterLimits().maxConcurrency).toBe(77);
    } finally {
      await first.stop({ timeout: 1 });
    }
    const again = starts();
    try {
      await again.start();
      expect(again.configVersion).toBe(before + 1);
      expect(await latestConfigVersionNumber(openStoreDb())).toBe(before + 1);
    } finally {
      await again.stop({ timeout: 1 });
    }
    // A start that cannot take its port leaves the cluster's config as it was: `ax dev` on a taken port stores nothing.
    writeFileSync(file, "max_concurrency: 78\n");
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    const refused = testRuntime(env, {
      flows: [flakyA, flakyB],
      roles: ["api"],
      port: (blocker.address() as AddressInfo).port,
      config: file,
      configFileWins: true,
      logLevel: "fatal",
    });
    try {
      await expect(refused.start()).rejects.toBeInstanceOf(AxPortInUseError);
      expect(await latestConfigVersionNumber(openStoreDb())).toBe(before + 1);
      expect(a.clusterLimits().maxConcurrency).toBe(77);
    } finally {
      await refused.stop({ timeout: 1 });
      blocker.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
