import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, relative, resolve } from "node:path";
import type { Logger } from "pino";

/** Set in the `ax dev` process a watching supervisor runs, so that it serves instead of watching again. */
export const SUPERVISED_ENV = "AX_DEV_SUPERVISED";

/** Saves come in bursts (an editor's temp file and rename, a formatter, a git checkout): one restart for each. */
const SETTLE_MS = 200;

/** What a flow's code can be made of; data files, logs and the config file (applied live) restart nothing. */
const CODE_FILE = /\.(ts|mts|cts|tsx|js|mjs|cjs|jsx|json)$/;
const NEVER_WATCHED = /(^|[/\\])(node_modules|\.git|\.ax|dist|coverage)([/\\]|$)/;

/**
 * The project whose code `ax dev --watch` follows: the nearest directory above the entry with a
 * package.json (the entry's imports usually stay inside it), else the entry's own directory.
 */
export function projectRoot(entry: string): string {
  const start = dirname(resolve(entry));
  for (let dir = start; ; dir = dirname(dir)) {
    if (existsSync(resolve(dir, "package.json"))) return dir;
    if (dirname(dir) === dir) return start;
  }
}

/**
 * `ax dev --watch`: runs `ax dev` (the same arguments, without --watch) in a child process and
 * starts a new one when a code file of the project changes. ESM modules cannot be loaded twice
 * in one process, so a restart is the only way the new code runs. The child stops as on SIGTERM:
 * in-flight attempts get its stop timeout, then are handed back to the queue. A child that exits
 * on its own (a syntax error in the entry) is started again on the next change. SIGINT/SIGTERM
 * reach the child, and this process exits with its code.
 */
export async function superviseDev(entry: string, log: Logger, ignore: string[]): Promise<never> {
  const { watch } = await import("chokidar");
  const root = projectRoot(entry);
  const ignored = new Set(ignore.map((file) => resolve(file)));
  const args = [...process.execArgv, ...process.argv.slice(1).filter((arg) => arg !== "--watch")];
  let child: ChildProcess | undefined;
  let exited: Promise<number> = Promise.resolve(0);
  let stopping = false;
  let restarting = false;

  const start = () => {
    const started = spawn(process.execPath, args, {
      stdio: ["inherit", "inherit", "inherit", "ipc"],
      env: { ...process.env, [SUPERVISED_ENV]: "1" },
    });
    child = started;
    exited = new Promise((done) =>
      started.once("exit", (code, signal) => {
        child = undefined;
        const status = code ?? (signal ? 128 : 1);
        if (!stopping && !restarting) log.warn({ code, signal }, "ax dev exited; waiting for a change to start it again");
        done(status);
      }),
    );
  };

  let timer: NodeJS.Timeout | undefined;
  const changed = new Set<string>();
  const restart = async () => {
    if (restarting || stopping) return;
    restarting = true;
    const files = [...changed].map((file) => relative(root, file));
    changed.clear();
    log.info({ changed: files }, `${files.join(", ")} changed: restarting ax dev`);
    child?.kill("SIGTERM");
    await exited;
    restarting = false;
    if (stopping) return;
    start();
    // Files saved while the old process was stopping belong to the new one, which loaded them.
    changed.clear();
  };

  const watcher = watch(root, {
    ignoreInitial: true,
    ignored: (path) => NEVER_WATCHED.test(relative(root, path)),
  });
  watcher.on("all", (_event, path) => {
    const file = resolve(path);
    if (!CODE_FILE.test(file) || ignored.has(file)) return;
    changed.add(file);
    clearTimeout(timer);
    timer = setTimeout(() => void restart(), SETTLE_MS);
  });
  watcher.on("error", (err) => log.warn({ err }, "ax dev --watch: watching the project's files failed"));
  await new Promise<void>((ready) => watcher.once("ready", ready));
  log.info({ root }, "ax dev --watch: restarting on changes to the project's code");
  start();

  const signal = await new Promise<NodeJS.Signals>((received) => {
    process.once("SIGINT", received);
    process.once("SIGTERM", received);
  });
  stopping = true;
  clearTimeout(timer);
  await watcher.close();
  // A second signal is the child's too: it exits at once on it.
  const forward = (again: NodeJS.Signals) => child?.kill(again);
  process.on("SIGINT", forward);
  process.on("SIGTERM", forward);
  child?.kill(signal);
  process.exit(await exited);
}

/**
 * In the child of `ax dev --watch`: a supervisor that dies (even by SIGKILL) closes the IPC
 * channel, and the child then stops as on SIGTERM instead of serving on, orphaned.
 */
export function stopWithSupervisor(): void {
  if (!process.env[SUPERVISED_ENV]) return;
  // Killed while this process was still loading: the channel closed before anyone listened.
  if (!process.channel || !process.connected) {
    console.error("ax dev: its watcher (ax dev --watch) is gone; exiting");
    process.exit(1);
  }
  // The channel is only a lifeline: it must not keep a process that is done from exiting.
  process.channel.unref();
  process.once("disconnect", () => process.kill(process.pid, "SIGTERM"));
}
