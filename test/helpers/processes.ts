import { execFile, spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

export const AX_BIN = fileURLToPath(new URL("../../packages/cli/bin/ax.js", import.meta.url));
export const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));
/** Node's flags that run a TypeScript fixture: see typescript-fixture.mjs. */
export const TS_FIXTURE = ["--import", new URL("./typescript-fixture.mjs", import.meta.url).href];

/** A child process whose output is drained (a full pipe would block it) and kept for diagnostics. */
export interface Child {
  process: ChildProcess;
  /** The last ~64 KiB of stdout and stderr together. */
  output(): string;
  /** Resolves when a line of output matches `pattern`; rejects if the process exits first or after `timeoutMs`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>;
  /** SIGTERM, then SIGKILL if it has not exited after `graceMs`; resolves once it has exited. */
  stop(graceMs?: number): Promise<void>;
}

/** `group`: the child leads a process group of its own, so a test can signal it and its children as a terminal's Ctrl-C does. */
export function startChild(command: string, args: string[], env: NodeJS.ProcessEnv = {}, group = false): Child {
  const child = spawn(command, args, {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: group,
  });
  let tail = "";
  const waiters = new Set<{ pattern: RegExp; resolve: () => void }>();
  const onData = (chunk: Buffer) => {
    tail = (tail + chunk.toString("utf8")).slice(-65_536);
    for (const w of waiters) {
      if (w.pattern.test(tail)) {
        waiters.delete(w);
        w.resolve();
      }
    }
  };
  child.stdout!.on("data", onData);
  child.stderr!.on("data", onData);
  const exited = once(child, "exit").then(() => undefined);
  return {
    process: child,
    output: () => tail,
    waitFor(pattern, timeoutMs = 30_000) {
      if (pattern.test(tail)) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no output matching ${pattern} after ${timeoutMs} ms:\n${tail}`)), timeoutMs);
        const waiter = {
          pattern,
          resolve: () => {
            clearTimeout(timer);
            resolve();
          },
        };
        waiters.add(waiter);
        void exited.then(() => {
          if (!waiters.delete(waiter)) return;
          clearTimeout(timer);
          reject(new Error(`${command} exited (code ${child.exitCode}) before printing ${pattern}:\n${tail}`));
        });
      });
    },
    async stop(graceMs = 5000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** `ax <args>` as its own OS process. */
export function startAx(args: string[], env: NodeJS.ProcessEnv = {}): Child {
  return startChild(process.execPath, [AX_BIN, ...args], env);
}

export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, "close");
  return port;
}

/**
 * A throwaway redis-server for tests that must FLUSHALL or kill Redis without touching the shared one.
 * Pass the `port` of one that was stopped to bring it back (empty) where its clients reconnect;
 * `extraArgs` are more redis-server options (e.g. `--maxmemory-policy allkeys-lru`).
 */
export async function startPrivateRedis(port?: number, extraArgs: string[] = []): Promise<{ url: string; port: number; child: Child }> {
  port ??= await freePort();
  const child = startChild("redis-server", [
    "--port",
    String(port),
    "--bind",
    "127.0.0.1",
    "--save",
    "",
    "--appendonly",
    "no",
    "--daemonize",
    "no",
    ...extraArgs,
  ]);
  await child.waitFor(/Ready to accept connections/, 10_000);
  return { url: `redis://127.0.0.1:${port}`, port, child };
}

/** A worker fixture (`node` with TS_FIXTURE, `<fixture>`) in its own OS process, so it can really be killed. */
export interface WorkerProcess extends Child {
  /** The worker id it records on its attempts (from the `{"ready": id}` line it prints). */
  id: string;
  pid: number;
  /** The output kept so far, a line each. */
  lines(): string[];
  /** SIGKILL: no cleanup, no graceful shutdown; its jobs stay locked until the lock lapses. */
  kill9(): Promise<void>;
}

export async function spawnWorker(fixture: string, env: NodeJS.ProcessEnv, timeoutMs = 60_000, group = false): Promise<WorkerProcess> {
  const child = startChild(process.execPath, [...TS_FIXTURE, fixture], env, group);
  const ready = /\{"ready":"([^"]+)"\}/;
  try {
    await child.waitFor(ready, timeoutMs);
  } catch (error) {
    await child.stop(0);
    throw error;
  }
  return {
    ...child,
    id: ready.exec(child.output())![1]!,
    pid: child.process.pid!,
    lines: () => child.output().split("\n"),
    async kill9() {
      child.process.kill("SIGKILL");
      await child.stop(0);
    },
  };
}

/** What an `ax` command left behind: its exit code and output. */
export interface Exited {
  code: number;
  stdout: string;
  stderr: string;
}

/** `ax <args>` as a separate process, like a person at a terminal; never rejects, reports the exit code. */
export async function runAx(args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 80_000): Promise<Exited> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [AX_BIN, ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0", ...env },
      timeout: timeoutMs,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number | string; stdout?: string; stderr?: string };
    return { code: typeof e.code === "number" ? e.code : -1, stdout: e.stdout ?? "", stderr: e.stderr ?? String(error) };
  }
}
