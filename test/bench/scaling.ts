import { availableParallelism } from "node:os";
import { isolate } from "../helpers/isolated.js";
import type { Child } from "../helpers/processes.js";
import { scaledSize, type Row } from "./stats.js";
import { triggerInBatches, waitForRuns } from "./runs.js";
import { benchClient, startWorkerProcesses, stopAll, TRIGGER_BATCH, WORKER_CONCURRENCY, WORKER_FLOW } from "./workers.js";

export const PROCESS_COUNTS = [1, 2, 4] as const;

export interface ProcessRound {
  processes: number;
  runs: number;
  /** First trigger to the last run's `finished_at`. */
  ms: number;
  tasksPerS: number;
  triggerMs: number;
  /** Attempts each worker process ran, largest first: a process left idle would show as a missing entry. */
  perProcess: number[];
}

export interface ScalingResult {
  rounds: ProcessRound[];
}

export function scalingRuns(): number {
  return scaledSize("AX_BENCH_PROCS_RUNS", 5_000);
}

/**
 * Throughput of 1, 2 and 4 worker processes on one schema and prefix: this process only triggers
 * (no coordinator: a single-node run needs none, and its passes would take CPU from the workers).
 * Each round's workers start and report ready before the first trigger, so start-up is not timed;
 * a warm-up batch is drained first so every process has compiled its hot paths.
 */
export async function workerScaling(runs: number, log: (message: string) => void): Promise<ScalingResult> {
  const env = isolate("scale");
  const client = benchClient(env);
  try {
    const rounds: ProcessRound[] = [];
    for (const processes of PROCESS_COUNTS) {
      log(`ax ${processes} worker process(es), concurrency ${WORKER_CONCURRENCY} each: ${runs} runs`);
      let workers: Child[] = [];
      try {
        workers = await startWorkerProcesses(env, processes);
        await waitForRuns(
          env,
          await triggerInBatches(client, WORKER_FLOW, Math.min(TRIGGER_BATCH, runs), TRIGGER_BATCH, `warm${processes}`),
          120_000,
        );
        const start = Date.now();
        const ids = await triggerInBatches(client, WORKER_FLOW, runs, TRIGGER_BATCH, `procs${processes}`);
        const triggerMs = Date.now() - start;
        const ms = (await waitForRuns(env, ids, 10 * 60_000)) - start;
        const shares = await env.sql<{ n: number }>(
          "select count(*)::int as n from attempts where run_id = any($1::uuid[]) group by worker order by n desc",
          [ids],
        );
        rounds.push({ processes, runs, ms, tasksPerS: (runs / ms) * 1000, triggerMs, perProcess: shares.map((s) => s.n) });
      } finally {
        await stopAll(workers);
      }
    }
    return { rounds };
  } finally {
    await client.close();
    await env.cleanup();
  }
}

export function scalingRows(r: ScalingResult, baselinePerS: number): Row[] {
  return r.rounds.map((p) => ({
    name: `ax ${p.processes} worker process${p.processes > 1 ? "es" : ""} x ${WORKER_CONCURRENCY}`,
    value: `${Math.round(p.tasksPerS)} /s`,
    vsBaseline: `${(p.tasksPerS / baselinePerS).toFixed(2)}x`,
    detail: `${p.runs} single-node runs in ${Math.round(p.ms)} ms (triggering ${p.triggerMs} ms, batches of ${TRIGGER_BATCH}); attempts per process ${p.perProcess.join("/")}; ${availableParallelism()} cores`,
  }));
}

export function scalingJson(r: ScalingResult): Record<string, number> {
  return Object.fromEntries(r.rounds.map((p) => [`procs${p.processes}_tasks_per_s`, Math.round(p.tasksPerS)]));
}
