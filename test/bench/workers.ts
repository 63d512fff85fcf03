import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "ax-scheduler";
import type { Isolated } from "../helpers/isolated.js";
import { REPO_ROOT, startChild, type Child } from "../helpers/processes.js";

/** Shared by the scenarios whose workers are separate OS processes (test/fixtures/bench-worker.mjs). */
export const WORKER_FIXTURE = fileURLToPath(new URL("../fixtures/bench-worker.mjs", import.meta.url));
/** The fixture's flow; it registers it when it starts. */
export const WORKER_FLOW = "bench_proc_single";
export const WORKER_CONCURRENCY = 100;
/** Runs per `triggerFlows` call: one statement and one Redis round per batch. */
export const TRIGGER_BATCH = 500;

/** The packages a worker process loads from their `dist`. */
const WORKER_PACKAGES = ["common", "store", "worker", "coordinator", "server", "sdk"];

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

/**
 * The worker processes run the built JavaScript: figures from a build older than the sources would
 * mislead. `pnpm bench` builds with turbo first and says so (`AX_BENCH_BUILT`): turbo matches
 * `dist` to the sources' content, and keeps a `dist` it finds up to date even when a source file
 * was only touched, which this comparison of times would refuse.
 */
export function assertBuilt(): void {
  if (process.env.AX_BENCH_BUILT === "1") return;
  for (const name of WORKER_PACKAGES) {
    const dir = join(REPO_ROOT, "packages", name);
    let built: number;
    try {
      built = newestMtime(join(dir, "dist"));
    } catch {
      built = 0;
    }
    if (newestMtime(join(dir, "src")) > built) {
      throw new Error(`packages/${name}/dist is missing or older than its sources; run \`pnpm build\` before the multi-process scenarios`);
    }
  }
}

/** This bench's schema and prefix; without the development condition, so `ax-scheduler` is its `dist`. */
function workerEnv(env: Isolated): NodeJS.ProcessEnv {
  return {
    AX_STORAGE: env.storage,
    AX_REDIS: env.redis,
    AX_PREFIX: env.prefix,
    AX_CONCURRENCY: String(WORKER_CONCURRENCY),
    NODE_OPTIONS: (process.env.NODE_OPTIONS ?? "").replace(/--conditions[= ]development/g, "").trim(),
  };
}

/** A worker process, started but not yet waited for, so its memory can be watched from its first moment. */
export function startWorkerProcess(env: Isolated, extraEnv: NodeJS.ProcessEnv = {}): Child {
  const nodeArgs = process.env.AX_BENCH_WORKER_NODE_ARGS?.split(" ").filter(Boolean) ?? [];
  return startChild(process.execPath, [...nodeArgs, WORKER_FIXTURE], { ...workerEnv(env), ...extraEnv });
}

export async function waitReady(worker: Child): Promise<void> {
  await worker.waitFor(/\{"ready":"[^"]+"\}/, 120_000);
}

/** `count` worker processes, each ready to serve; on a failed start the ones already up are stopped. */
export async function startWorkerProcesses(env: Isolated, count: number): Promise<Child[]> {
  const workers = Array.from({ length: count }, () => startWorkerProcess(env));
  const ready = await Promise.allSettled(workers.map(waitReady));
  const failed = ready.find((r) => r.status === "rejected");
  if (failed) {
    await stopAll(workers);
    throw failed.reason;
  }
  return workers;
}

/** Graceful stop (SIGTERM, SIGKILL after 10 s) of every process, all at once. */
export async function stopAll(workers: Child[]): Promise<void> {
  await Promise.all(workers.map((w) => w.stop(10_000)));
}

/** A producer only: every task runs in the worker processes, and the flow exists once one of them has started. */
export function benchClient(env: Isolated): Client {
  return new Client({ storage: env.storage, redis: env.redis, prefix: env.prefix });
}
