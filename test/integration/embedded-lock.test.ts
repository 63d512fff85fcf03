import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isolate } from "../helpers/isolated.js";
import { AX_BIN, freePort, REPO_ROOT, startAx, type Child } from "../helpers/processes.js";

const run = promisify(execFile);
const OPEN_EMBEDDED = "test/fixtures/open-embedded.ts";

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
  const result = await exec(process.execPath, ["--import", "tsx", OPEN_EMBEDDED, dataDir]);
  const line = result.stdout.trim().split("\n").at(-1) ?? "";
  try {
    return JSON.parse(line) as { opened: boolean };
  } catch {
    throw new Error(`the second opener crashed (exit ${result.code}):\n${result.stdout}\n${result.stderr}`);
  }
}

// Each `ax` process loads TypeScript through tsx: tens of seconds on a busy machine, hence the timeouts.
describe("an embedded data directory held by ax dev", { timeout: 300_000 }, () => {
  // Only the Redis prefix of `isolate()` is used; the history lives in the PGlite directory below.
  const env = isolate("pglock");
  const root = mkdtempSync(join(tmpdir(), "ax-lock-"));
  const dataDir = join(root, "data");
  const connection = ["--data-dir", dataDir, "--prefix", env.prefix];
  let dev: Child;
  let api: string;

  beforeAll(async () => {
    const port = await freePort();
    api = `http://127.0.0.1:${port}`;
    dev = startAx(["dev", "test/fixtures/hello-flow.ts", "--port", String(port), ...connection], {
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

    const [listed, shown, unknown] = await Promise.all([
      ax(["runs", "--flow", "hello_flow", ...connection]),
      ax(["run", runId!, "--json", ...connection]),
      ax(["run", "00000000-0000-4000-8000-000000000000", ...connection]),
    ]);
    expect(listed.stderr).toBe("");
    expect(listed.stdout).toMatch(new RegExp(`^${runId}\\s+hello_flow\\s+success`));

    expect(shown.code).toBe(0);
    const info = JSON.parse(shown.stdout) as { status: string; tasks: { key: string; result: unknown }[] };
    expect(info.status).toBe("success");
    expect(info.tasks.map((t) => [t.key, t.result])).toEqual([
      ["hello_greet", "hello lock"],
      ["hello_measure", 10],
    ]);

    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/^AxRunNotFoundError: no run with id 00000000-0000-4000-8000-000000000000/);
  });

  it("a second opener that is not the CLI gets AxDataDirLockedError naming the holder, not a crash", async () => {
    const second = await openEmbedded(dataDir);
    expect(second).toMatchObject({ opened: false, name: "AxDataDirLockedError" });
    expect(second.message).toContain(`in use by process ${dev.process.pid}`);
    expect(second.message).toContain(api);
    expect(second.message).toMatch(/DATABASE_URL/);
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
    expect(await openEmbedded(dataDir)).toEqual({ opened: true, runs: 1 });
    expect(existsSync(`${dataDir}.lock`)).toBe(false);
  });
});
