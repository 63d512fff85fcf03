import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import { isolate } from "../helpers/isolated.js";
import type { Child } from "../helpers/processes.js";
import { meterServerCpu, processCpuMs, type ServerCpu } from "./process-cpu.js";
import { waitForRuns } from "./runs.js";
import { round, scaledSize, type Row } from "./stats.js";
import { benchClient, startWorkerProcesses, stopAll, WORKER_FLOW } from "./workers.js";

/** Worker processes serving the runs: each gets the wake messages, as in a cluster. */
const PROCESSES = 4;
/** Between one trigger's answer and the next trigger. */
const GAP_MS = 2;

export interface SparseResult {
  runs: number;
  processes: number;
  ms: number;
  servers: ServerCpu;
  /** CPU per run of the worker processes together, and of this process (which only triggers). */
  workersMs: number;
  triggeringMs: number;
  /** BullMQ fetch scripts Redis ran per run (each takes a job from the wait list with one RPOPLPUSH, found or not). */
  fetchesPerRun: number | undefined;
}

export function sparseRuns(): number {
  return scaledSize("AX_BENCH_SPARSE_RUNS", 1_000);
}

/** Calls of one command Redis has run since it started, from its own statistics (every client's). */
async function commandCalls(redis: Redis, command: string): Promise<number | undefined> {
  const line = (await redis.info("commandstats")).split("\n").find((l) => l.startsWith(`cmdstat_${command}:`));
  const calls = line?.match(/calls=(\d+)/)?.[1];
  return calls === undefined ? undefined : Number(calls);
}

/**
 * Traffic as a service sends it, one run at a time, rather than in bursts: `runs` single-node runs
 * triggered one after the other, `GAP_MS` apart, served by `PROCESSES` worker processes. What
 * each run costs PostgreSQL and Redis then is mostly what every statement and every wake-up
 * costs, which batching hides in the throughput scenarios.
 */
export async function sparseLoad(runs: number, log: (message: string) => void): Promise<SparseResult> {
  const env = isolate("sparse");
  const client = benchClient(env);
  const redis = new Redis(env.redis);
  let workers: Child[] = [];
  try {
    log(`ax runs one at a time, ${GAP_MS} ms apart, over ${PROCESSES} worker processes: ${runs} runs`);
    workers = await startWorkerProcesses(env, PROCESSES);
    await waitForRuns(env, [await client.triggerFlow(WORKER_FLOW, { warm: true })], 60_000);
    const servers = meterServerCpu();
    const workersCpu = () => workers.reduce((sum, w) => sum + (processCpuMs(w.process.pid!) ?? 0), 0);
    const workersBefore = workersCpu();
    const cpuBefore = process.cpuUsage();
    const fetchesBefore = await commandCalls(redis, "rpoplpush");
    const start = Date.now();
    const ids: string[] = [];
    for (let i = 0; i < runs; i++) {
      ids.push(await client.triggerFlow(WORKER_FLOW, { i }));
      await sleep(GAP_MS);
    }
    const ms = (await waitForRuns(env, ids, 10 * 60_000)) - start;
    const serverCpu = servers(runs);
    const workersMs = (workersCpu() - workersBefore) / runs;
    const cpu = process.cpuUsage(cpuBefore);
    const triggeringMs = (cpu.user + cpu.system) / 1000 / runs;
    const fetchesAfter = await commandCalls(redis, "rpoplpush");
    const fetchesPerRun = fetchesBefore === undefined || fetchesAfter === undefined ? undefined : (fetchesAfter - fetchesBefore) / runs;
    return { runs, processes: PROCESSES, ms, servers: serverCpu, workersMs, triggeringMs, fetchesPerRun };
  } finally {
    await stopAll(workers);
    redis.disconnect();
    await client.close();
    await env.cleanup();
  }
}

export function sparseRows(r: SparseResult): Row[] {
  const ms = (v: number | undefined) => (v === undefined ? "n/a" : `${round(v, 3)} ms`);
  return [
    {
      name: "sparse runs: workers' CPU per run",
      value: ms(r.workersMs),
      vsBaseline: "-",
      detail: `the ${r.processes} worker processes together; this process, triggering: ${ms(r.triggeringMs)} per run`,
    },
    {
      name: "sparse runs: PostgreSQL CPU per run",
      value: ms(r.servers.postgres),
      vsBaseline: "-",
      detail: `${r.runs} single-node runs triggered one at a time, ${GAP_MS} ms apart, over ${r.processes} worker processes, in ${Math.round(r.ms)} ms; every postgres process of the machine`,
    },
    {
      name: "sparse runs: Redis CPU per run",
      value: ms(r.servers.redis),
      vsBaseline: "-",
      detail: `the same runs; BullMQ fetch scripts per run ${r.fetchesPerRun === undefined ? "n/a" : round(r.fetchesPerRun, 2)} (RPOPLPUSH calls, found or not)`,
    },
  ];
}

export function sparseJson(r: SparseResult): Record<string, number> {
  return {
    sparse_workers_cpu_ms_per_run: round(r.workersMs, 3),
    sparse_trigger_cpu_ms_per_run: round(r.triggeringMs, 3),
    ...(r.servers.postgres !== undefined && { sparse_pg_cpu_ms_per_run: round(r.servers.postgres, 3) }),
    ...(r.servers.redis !== undefined && { sparse_redis_cpu_ms_per_run: round(r.servers.redis, 3) }),
    ...(r.fetchesPerRun !== undefined && { sparse_fetches_per_run: round(r.fetchesPerRun, 2) }),
  };
}
