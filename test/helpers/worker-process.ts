import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** A worker running in its own OS process, so it can really be killed. */
export interface WorkerProcess {
  /** The worker id it records on its attempts. */
  id: string;
  pid: number;
  child: ChildProcess;
  /** Every line it printed (pino JSON at the level asked for). */
  output: string[];
  exited: Promise<number | null>;
  /** SIGKILL: no cleanup, no graceful shutdown, its jobs stay locked until the lock lapses. */
  kill9(): Promise<void>;
  /** SIGTERM: graceful stop. */
  stop(): Promise<void>;
}

/** Starts `node --import tsx <fixture>` and resolves once it prints `{"ready": id}`. */
export function spawnWorker(fixture: string, env: Record<string, string>, timeoutMs = 60_000): Promise<WorkerProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", fixture], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`worker ${fixture} not ready after ${timeoutMs} ms:\n${output.join("\n")}`));
    }, timeoutMs);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`worker ${fixture} exited (${code}) before it was ready:\n${output.join("\n")}`));
    });
    for (const stream of [child.stdout!, child.stderr!]) {
      createInterface({ input: stream }).on("line", (line) => {
        output.push(line);
        if (!line.startsWith('{"ready"')) return;
        clearTimeout(timer);
        const id = (JSON.parse(line) as { ready: string }).ready;
        resolve({
          id,
          pid: child.pid!,
          child,
          output,
          exited,
          async kill9() {
            child.kill("SIGKILL");
            await exited;
          },
          async stop() {
            if (child.exitCode !== null || child.signalCode !== null) return;
            child.kill("SIGTERM");
            await exited;
          },
        });
      });
    }
  });
}
