import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { isolate } from "../helpers/isolated.js";
import { startChild, type Child } from "../helpers/processes.js";
import { meterServerCpu, processCpuMs, type ServerCpu } from "./process-cpu.js";
import { waitForRuns } from "./runs.js";
import { fixedSize, round, scaledSize, type Row } from "./stats.js";
import { benchClient, startWorkerProcesses, stopAll, waitReady, WORKER_CONCURRENCY, WORKER_FLOW } from "./workers.js";

const BULLMQ_WORKER = fileURLToPath(new URL("../fixtures/bullmq-bench-worker.mjs", import.meta.url));

/** Worker processes serving the runs: each gets the wake messages, as in a cluster. */
const PROCESSES = 4;
/** Between one trigger's answer and the next trigger. */
const GAP_MS = 2;
/**
 * Runs (jobs for BullMQ) sent the same way before the metered ones. Each process compiles its
 * hot code as it first runs it: metered from the first run, 1,000 runs over four processes spent
 * about a quarter of the workers' CPU in V8's optimising compiler, and the figure fell by a third
 * when the same processes served 3,000.
 */
const WARM_UP = fixedSize("AX_BENCH_SPARSE_WARMUP", 500);

/** `count` sends one after the other, `GAP_MS` between one's answer and the next. */
async function paced<T>(count: number, send: (i: number) => Promise<T>): Promise<T[]> {
  const sent: T[] = [];
  for (let i = 0; i < count; i++) {
    sent.push(await send(i));
    await sleep(GAP_MS);
  }
  return sent;
}

/** Raw BullMQ under the same traffic: jobs added one at a time, the same gap, as many worker processes. */
export interface SparseBaseline {
  ms: number;
  /** CPU per job of the worker processes together, and of this process (which only adds). */
  workersMs: number;
  addingMs: number;
  redisMs: number | undefined;
}

export interface SparseResult {
  runs: number;
  processes: number;
  ms: number;
  baseline: SparseBaseline;
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

function processesCpu(children: Child[]): number {
  return children.reduce((sum, c) => sum + (processCpuMs(c.process.pid!) ?? 0), 0);
}

/** The same traffic on raw BullMQ: `runs` no-op jobs added one at a time to a queue that `PROCESSES` worker processes serve. */
async function bullmqSparse(redisUrl: string, prefix: string, runs: number): Promise<SparseBaseline> {
  const name = "bullmq_sparse";
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const queue = new Queue(name, { connection, prefix });
  const env = { AX_REDIS: redisUrl, AX_PREFIX: prefix, AX_QUEUE: name, AX_CONCURRENCY: String(WORKER_CONCURRENCY) };
  const workers = Array.from({ length: PROCESSES }, () => startChild(process.execPath, [BULLMQ_WORKER], env));
  try {
    await Promise.all(workers.map(waitReady));
    const drained = async () => {
      while ((await queue.getJobCountByTypes("wait", "active", "prioritized", "delayed")) > 0) await sleep(5);
    };
    await paced(WARM_UP, (i) => queue.add("warm", { i }, { removeOnComplete: true }));
    await drained();
    const servers = meterServerCpu();
    const workersBefore = processesCpu(workers);
    const cpuBefore = process.cpuUsage();
    const start = Date.now();
    await paced(runs, (i) => queue.add("job", { i }, { removeOnComplete: true }));
    await drained();
    const ms = Date.now() - start;
    const cpu = process.cpuUsage(cpuBefore);
    return {
      ms,
      workersMs: (processesCpu(workers) - workersBefore) / runs,
      addingMs: (cpu.user + cpu.system) / 1000 / runs,
      redisMs: servers(runs).redis,
    };
  } finally {
    await stopAll(workers);
    await queue.obliterate({ force: true });
    await queue.close();
    connection.disconnect();
  }
}

/**
 * Traffic as a service sends it, one run at a time, rather than in bursts: `runs` single-node runs
 * triggered one after the other, `GAP_MS` apart, served by `PROCESSES` worker processes. What
 * each run costs PostgreSQL and Redis then is mostly what every statement and every wake-up
 * costs, which batching hides in the throughput scenarios. Raw BullMQ gets the same traffic and
 * as many worker processes first, for the ratio.
 */
export async function sparseLoad(runs: number, log: (message: string) => void): Promise<SparseResult> {
  const env = isolate("sparse");
  const client = benchClient(env);
  const redis = new Redis(env.redis);
  let workers: Child[] = [];
  try {
    log(`BullMQ jobs one at a time, ${GAP_MS} ms apart, over ${PROCESSES} worker processes: ${runs} jobs`);
    const baseline = await bullmqSparse(env.redis, env.prefix, runs);
    log(`ax runs one at a time, ${GAP_MS} ms apart, over ${PROCESSES} worker processes: ${runs} runs`);
    workers = await startWorkerProcesses(env, PROCESSES);
    await waitForRuns(env, await paced(WARM_UP, (i) => client.triggerFlow(WORKER_FLOW, { warm: i })), 60_000);
    const servers = meterServerCpu();
    const workersBefore = processesCpu(workers);
    const cpuBefore = process.cpuUsage();
    const fetchesBefore = await commandCalls(redis, "rpoplpush");
    const start = Date.now();
    const ids = await paced(runs, (i) => client.triggerFlow(WORKER_FLOW, { i }));
    const ms = (await waitForRuns(env, ids, 10 * 60_000)) - start;
    const serverCpu = servers(runs);
    const workersMs = (processesCpu(workers) - workersBefore) / runs;
    const cpu = process.cpuUsage(cpuBefore);
    const triggeringMs = (cpu.user + cpu.system) / 1000 / runs;
    const fetchesAfter = await commandCalls(redis, "rpoplpush");
    const fetchesPerRun = fetchesBefore === undefined || fetchesAfter === undefined ? undefined : (fetchesAfter - fetchesBefore) / runs;
    return { runs, processes: PROCESSES, ms, baseline, servers: serverCpu, workersMs, triggeringMs, fetchesPerRun };
  } finally {
    await stopAll(workers);
    redis.disconnect();
    await client.close();
    await env.cleanup();
  }
}

/** Every process's CPU per run: the bound on a machine of few cores, as in the throughput rows. */
function totals(r: SparseResult): { ax: number; bullmq: number } {
  return {
    ax: r.workersMs + r.triggeringMs + (r.servers.postgres ?? 0) + (r.servers.redis ?? 0),
    bullmq: r.baseline.workersMs + r.baseline.addingMs + (r.baseline.redisMs ?? 0),
  };
}

export function sparseRows(r: SparseResult): Row[] {
  const ms = (v: number | undefined) => (v === undefined ? "n/a" : `${round(v, 3)} ms`);
  const { ax, bullmq } = totals(r);
  const b = r.baseline;
  return [
    {
      name: "sparse runs: CPU per run, every process",
      value: ms(ax),
      vsBaseline: `${round(ax / bullmq, 1)}x cpu`,
      detail: `raw BullMQ ${ms(bullmq)} per job under the same traffic (workers ${ms(b.workersMs)} + adding ${ms(b.addingMs)} + Redis ${ms(b.redisMs)}; ${r.runs} jobs in ${Math.round(b.ms)} ms)`,
    },
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
  const { ax, bullmq } = totals(r);
  return {
    sparse_total_cpu_ms_per_run: round(ax, 3),
    sparse_bullmq_total_cpu_ms_per_run: round(bullmq, 3),
    sparse_workers_cpu_ms_per_run: round(r.workersMs, 3),
    sparse_trigger_cpu_ms_per_run: round(r.triggeringMs, 3),
    ...(r.servers.postgres !== undefined && { sparse_pg_cpu_ms_per_run: round(r.servers.postgres, 3) }),
    ...(r.servers.redis !== undefined && { sparse_redis_cpu_ms_per_run: round(r.servers.redis, 3) }),
    ...(r.fetchesPerRun !== undefined && { sparse_fetches_per_run: round(r.fetchesPerRun, 2) }),
  };
}
