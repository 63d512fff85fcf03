import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, it } from "vitest";
import { ax, type Client, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { runAx } from "../helpers/processes.js";
import { testRuntime } from "../helpers/runtime.js";

const step = ax.task({ name: "usage_step" }, () => "done");
const plain = ax.flow({ name: "usage_flow" }, () => {
  step();
});
const hourly = ax.flow({ name: "usage_hourly", schedule: { cron: "0 * * * *", timezone: "UTC" } }, () => {
  step();
});
// February 30th: the cron parses but never fires.
const never = ax.flow({ name: "usage_never", schedule: { cron: "0 0 30 2 *", timezone: "UTC" } }, () => {
  step();
});

// Each `ax` start loads ax (about a second of CPU): independent commands run concurrently.
describe.concurrent("ax flags and arguments", { timeout: 90_000 }, () => {
  const env = isolate("cliusage");
  const connection = () => ["--storage", env.storage, "--prefix", env.prefix];
  let runtime: Runtime;
  let client: Client;

  beforeAll(async () => {
    runtime = testRuntime(env, { flows: [plain, hourly, never] });
    await runtime.start();
    client = runtime.client();
  });

  afterAll(async () => {
    await runtime?.stop();
    await env.cleanup();
  });

  it("ax trigger --wait --timeout <not a duration> names the flag and creates no run", async ({ expect }) => {
    const result = await runAx([...connection(), "trigger", "usage_flow", "--business-key", "bad-timeout", "--wait", "--timeout", "soon"]);
    expect(result).toMatchObject({ code: 1, stdout: "" });
    expect(result.stderr).toMatch(/^AxUsageError: ax trigger: --timeout: "soon" is not a duration/);
    const [row] = await env.sql<{ n: number }>("select count(*)::int as n from runs where business_key = 'bad-timeout'");
    expect(row!.n).toBe(0);
  });

  it("ax rerun --wait --timeout <not a duration> names the flag and starts no rerun", async ({ expect }) => {
    const runId = await client.triggerFlow("usage_flow", null);
    await client.waitForRun(runId, { timeout: "30s" });
    const result = await runAx([...connection(), "rerun", runId, "--all", "--wait", "--timeout", "soon"]);
    expect(result).toMatchObject({ code: 1, stdout: "" });
    expect(result.stderr).toMatch(/^AxUsageError: ax rerun: --timeout: "soon" is not a duration/);
    const [row] = await env.sql<{ n: number }>("select count(*)::int as n from runs where rerun_of = $1", [runId]);
    expect(row!.n).toBe(0);
  });

  it("a zero --timeout for --wait, or two rerun modes together, are refused naming what was given", async ({ expect }) => {
    const runId = await client.triggerFlow("usage_flow", null);
    await client.waitForRun(runId, { timeout: "30s" });
    const [zero, modes] = await Promise.all([
      runAx([...connection(), "trigger", "usage_flow", "--business-key", "zero-timeout", "--wait", "--timeout", "0"]),
      runAx([...connection(), "rerun", runId, "--from", "x", "--all"]),
    ]);
    expect(zero.stderr).toMatch(/^AxUsageError: ax trigger: --timeout: must be at least 1ms\n/);
    expect(modes.stderr).toMatch(
      /^AxUsageError: ax rerun: --all and --from together: --all re-executes every node; give it alone, or --failed or --from <node>\n/,
    );
    const [row] = await env.sql<{ n: number }>("select count(*)::int as n from runs where business_key = 'zero-timeout' or rerun_of = $1", [
      runId,
    ]);
    expect(row!.n).toBe(0);
  });

  it("--timeout without --wait is refused, since nothing would wait; nothing is triggered or rerun", async ({ expect }) => {
    const [trigger, rerun] = await Promise.all([
      runAx([...connection(), "trigger", "usage_flow", "--business-key", "timeout-alone", "--timeout", "5s"]),
      runAx([...connection(), "rerun", "00000000-0000-4000-8000-000000000000", "--timeout", "5s"]),
    ]);
    expect(trigger).toMatchObject({ code: 1, stdout: "" });
    expect(trigger.stderr).toBe("AxUsageError: ax trigger: --timeout is how long --wait waits: add --wait, or leave --timeout out\n");
    expect(rerun.stderr).toBe("AxUsageError: ax rerun: --timeout is how long --wait waits: add --wait, or leave --timeout out\n");
    const [row] = await env.sql<{ n: number }>("select count(*)::int as n from runs where business_key = 'timeout-alone'");
    expect(row!.n).toBe(0);
  });

  it("ax runs --json prints the runs as JSON, and [] on stdout when none match", async ({ expect }) => {
    const runId = await client.triggerFlow("usage_flow", null, { businessKey: "runs-json" });
    const [found, none] = await Promise.all([
      runAx([...connection(), "runs", "--json", "--business-key", "runs-json"]),
      runAx([...connection(), "runs", "--json", "--business-key", "no-such-key"]),
    ]);
    expect(JSON.parse(found.stdout)).toMatchObject([{ id: runId, flow: "usage_flow", businessKey: "runs-json" }]);
    expect(none).toMatchObject({ code: 0, stdout: "[]\n", stderr: "" });
  });

  it("an unknown flag, command or missing argument is an AxUsageError like any other refusal", async ({ expect }) => {
    const [flag, command, argument] = await Promise.all([
      runAx([...connection(), "runs", "--bogus"]),
      runAx([...connection(), "bogus"]),
      runAx([...connection(), "trigger"]),
    ]);
    expect(flag).toMatchObject({ code: 1, stdout: "" });
    expect(flag.stderr).toMatch(/^AxUsageError: ax runs: unknown option '--bogus'/);
    expect(command.stderr).toMatch(/^AxUsageError: unknown command 'bogus'/);
    expect(argument.stderr).toMatch(/^AxUsageError: ax trigger: missing required argument 'flow'/);
  });

  it("a number flag that is not a whole number says what it expects, not zod's NaN", async ({ expect }) => {
    const [word, negative, port] = await Promise.all([
      runAx([...connection(), "runs", "--limit", "x"]),
      runAx([...connection(), "runs", "--limit", "-3"]),
      runAx([...connection(), "dev", "test/fixtures/hello-flow.ts", "--port", "99999"]),
    ]);
    expect(word.stderr).toMatch(/^AxUsageError: ax runs: --limit: expected a whole number\n/);
    expect(negative.stderr).toMatch(/^AxUsageError: ax runs: --limit: expected a whole number greater than 0\n/);
    expect(port.stderr).toMatch(/^AxUsageError: ax dev: --port: expected a port, 0 to 65535\n/);
  });

  it("an entry module that is missing or exports no flow is an AxEntryError saying what to give", async ({ expect }) => {
    const [missing, empty] = await Promise.all([
      runAx([...connection(), "worker", "test/fixtures/no-such-entry.ts"]),
      runAx([...connection(), "worker", "test/helpers/isolated.ts"]),
    ]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(
      /^AxEntryError: no entry module at \S+no-such-entry\.ts: give the path of the module that exports your flows/,
    );
    expect(empty.stderr).toMatch(/^AxEntryError: test\/helpers\/isolated\.ts exports no flows: export the values returned by ax\.flow/);
  });

  it("a command on embedded history where there is none says where it looked, and creates nothing", async ({ expect }) => {
    const dataDir = join(tmpdir(), `ax-no-history-${process.pid}-${Date.now()}`);
    const [runs, run] = await Promise.all([
      runAx(["--data-dir", dataDir, "runs"], { DATABASE_URL: "" }),
      runAx(["--data-dir", dataDir, "run", "0b5c1f5e-4a43-4a52-9d1e-3d2b1a0c9f11"], { DATABASE_URL: "" }),
    ]);
    for (const result of [runs, run]) {
      expect(result).toMatchObject({ code: 1, stdout: "" });
      expect(result.stderr).toMatch(
        new RegExp(`^AxNoEmbeddedHistoryError: no embedded history in ${dataDir} \\(the directory does not exist`),
      );
    }
    expect(existsSync(dataDir)).toBe(false);
  });

  it("duration flags of ax prune and ax token create are checked before anything is done", async ({ expect }) => {
    const [prune, token] = await Promise.all([
      runAx([...connection(), "prune", "--older-than", "ages"]),
      runAx([...connection(), "token", "create", "--name", "usage", "--scope", "read", "--expires", "never"]),
    ]);
    expect(prune.code).toBe(1);
    expect(prune.stderr).toMatch(/^AxUsageError: ax prune: --older-than: "ages" is not a duration/);
    expect(token.code).toBe(1);
    expect(token.stderr).toMatch(/^AxUsageError: ax token create: --expires: "never" is not a duration/);
    // Durations too short to mean anything are refused the same way: a token expired at birth, a prune of the last hour.
    const [shortPrune, expired] = await Promise.all([
      runAx([...connection(), "prune", "--older-than", "30m"]),
      runAx([...connection(), "token", "create", "--name", "usage", "--scope", "read", "--expires", "0"]),
    ]);
    expect(shortPrune.stderr).toMatch(/^AxUsageError: ax prune: --older-than: must be at least 1h/);
    expect(expired.stderr).toMatch(/^AxUsageError: ax token create: --expires: must be at least 1s/);
    expect(await client.tokens.list()).toEqual([]);
  });

  it("a wrong global flag is an AxUsageError naming the flag, with no empty command name", async ({ expect }) => {
    const result = await runAx(["--storage", env.storage, "--prefix", "bad prefix", "runs"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^AxUsageError: ax: --prefix: letters, digits/);
    const [storage, redis] = await Promise.all([runAx(["--storage", "mysql://x", "runs"]), runAx(["--redis", "http://x", "runs"])]);
    expect(storage.stderr).toMatch(/^AxUsageError: ax: --storage: a postgres:\/\/ or postgresql:\/\/ URL/);
    expect(redis.stderr).toMatch(/^AxUsageError: ax: --redis: a redis:\/\/, rediss:\/\/ or redis\+sentinel:\/\/ URL/);
    // A value from the environment is named by its variable; a URL that cannot be read says what to check.
    const [fromEnv, unreadable] = await Promise.all([
      runAx(["runs"], { DATABASE_URL: "mysql://x", REDIS_URL: "http://x" }),
      runAx(["--storage", "postgres://postgres@127.0.0.1:notaport/test", "runs"]),
    ]);
    expect(fromEnv.stderr).toMatch(/^AxUsageError: ax: DATABASE_URL: a postgres:\/\/ or postgresql:\/\/ URL.*; REDIS_URL: a redis:\/\//);
    expect(unreadable.stderr).toMatch(/^AxUsageError: ax: --storage: not a URL that can be read: the port must be a number/);
    // Two schemas would silently mean the first.
    const twice = await runAx(["--storage", `${env.storage}&schema=other`, "runs"]);
    expect(twice.stderr).toMatch(/^AxUsageError: ax: --storage: give \?schema= once/);
  });

  it("a flag value the runtime could not use is an AxUsageError naming the flag, before anything starts", async ({ expect }) => {
    const entry = "test/fixtures/hello-flow.ts";
    const [empty, bad, schema, noName, spaced, serverConfig] = await Promise.all([
      runAx([...connection(), "worker", entry, "--queues", " , "]),
      runAx([...connection(), "worker", entry, "--queues", "billing,bad queue!"]),
      runAx(["--storage", "postgres://127.0.0.1/test?schema=Bad-Name", "runs"]),
      runAx([...connection(), "token", "create", "--name", "", "--scope", "read"]),
      runAx([...connection(), "token", "create", "--name", "a b", "--scope", "read"]),
      runAx([...connection(), "server", "--config", "config/runtime.yaml", "--insecure-no-auth", "--port", "0"]),
    ]);
    expect(empty.stderr).toMatch(/^AxUsageError: ax worker: --queues: name at least one queue/);
    expect(bad.stderr).toMatch(/^AxUsageError: ax worker: --queues: "bad queue!": use letters, digits, _ and -/);
    expect(schema.stderr).toMatch(/^AxUsageError: ax: --storage: schema "Bad-Name": use lower-case letters/);
    expect(noName.stderr).toMatch(/^AxUsageError: ax token create: --name: 1-64 letters/);
    expect(spaced.stderr).toMatch(/^AxUsageError: ax token create: --name: 1-64 letters/);
    expect(serverConfig.stderr).toMatch(/^AxUsageError: ax server: --config needs <entry>/);
    const priority = await runAx([...connection(), "trigger", "usage_flow", "--priority", "99999999"]);
    expect(priority.stderr).toMatch(/^AxUsageError: ax trigger: --priority: expected a whole number from 1 to 2097151/);
    for (const result of [empty, bad, schema, noName, spaced, serverConfig]) expect(result.code).toBe(1);
    expect(await client.tokens.list()).toEqual([]);
  });

  it("ax backfill cancel without an id says the <id> is missing", async ({ expect }) => {
    const result = await runAx([...connection(), "backfill", "cancel"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^AxUsageError: ax backfill cancel: missing <id>/);
    expect(result.stderr).not.toContain("--from");
  });

  it("ax backfill refuses a time without an offset, showing both accepted forms, and writes nothing", async ({ expect }) => {
    const result = await runAx([...connection(), "backfill", "usage_hourly", "--from", "2026-01-01T00:00", "--to", "2026-01-02"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^AxUsageError: ax backfill: --from: "2026-01-01T00:00" has no UTC offset; write 2026-01-01T00:00Z for UTC or 2026-01-01T00:00\+01:00/,
    );
    // The other backfill of this file (2025) runs concurrently.
    expect((await client.listBackfills()).filter((b) => b.from.startsWith("2026"))).toEqual([]);
  });

  it("ax backfill refuses a day the calendar does not have rather than rolling it over, naming the flag", async ({ expect }) => {
    const from = await runAx([...connection(), "backfill", "usage_hourly", "--from", "2026-02-30", "--to", "2026-03-05"]);
    expect(from.code).toBe(1);
    expect(from.stderr).toMatch(/^AxUsageError: ax backfill: --from: "2026-02-30" names a day the calendar does not have/);
    const to = await runAx([...connection(), "backfill", "usage_hourly", "--from", "2026-02-01", "--to", "2026-02-29T00:00:00+01:00"]);
    expect(to.code).toBe(1);
    expect(to.stderr).toMatch(/^AxUsageError: ax backfill: --to: "2026-02-29T00:00:00\+01:00" names a day the calendar does not have/);
    expect((await client.listBackfills()).filter((b) => b.from.startsWith("2026"))).toEqual([]);
  });

  it("ax backfill reads a date alone as midnight UTC, honours an offset, and its ETA is never a bogus number", async ({ expect }) => {
    const result = await runAx([...connection(), "backfill", "usage_hourly", "--from", "2025-06-01", "--to", "2025-06-01T03:00:00+01:00"]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    // [00:00Z, 02:00Z): two hourly ticks, whatever this machine's time zone.
    expect(result.stdout).toMatch(/2 tick\(s\) of usage_hourly, 2 new run\(s\)/);
    expect(result.stdout).toMatch(/finished: 2 succeeded, 0 failed/);
    // Nothing is done when the bar first shows: no rate, so no number.
    const etas = [...result.stdout.matchAll(/ETA (\S+)/g)].map((m) => m[1]);
    expect(etas[0]).toBe("–");
    for (const eta of etas) expect(eta).toMatch(/^(–|\d+s|\d+m\d\ds|\d+h\d\dm)$/);
    const ticks = (await client.listRuns({ flow: "usage_hourly", limit: 10 })).filter((r) => r.trigger === "backfill");
    expect(ticks).toHaveLength(2);
  });

  it("ax schedules says never for a cron that never fires", async ({ expect }) => {
    const result = await runAx([...connection(), "schedules"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/usage_never {2}cron "0 0 30 2 \*".*\n {2}next \(UTC\): never/);
    expect(result.stdout).not.toMatch(/next \(\S+\): *\n/);
  });

  it("ax coordinator and ax worker offer only the flags their roles use; the coordinator's help says what it does", async ({ expect }) => {
    const [coordinator, worker, dev] = await Promise.all([
      runAx(["coordinator", "--help"]),
      runAx(["worker", "--help"]),
      runAx(["dev", "--help"]),
    ]);
    expect(coordinator.stdout).toMatch(/schedules/);
    expect(coordinator.stdout).toMatch(/reconcile/);
    for (const flag of ["--port", "--queues", "--concurrency", "--durability"]) expect(coordinator.stdout).not.toContain(flag);
    expect(worker.stdout).not.toContain("--port");
    for (const flag of ["--port", "--queues", "--concurrency", "--durability", "--metrics-port"]) expect(dev.stdout).toContain(flag);
    // Only `ax dev` reads config/runtime.yaml unasked: the others must not promise that default.
    const unwrapped = (help: string) => help.replace(/\s+/g, " ");
    expect(unwrapped(dev.stdout)).toContain("(default config/runtime.yaml if it exists)");
    for (const help of [worker.stdout, coordinator.stdout]) {
      expect(unwrapped(help)).toContain("after that the stored version wins");
      expect(help).not.toContain("config/runtime.yaml");
    }
  });
});
