import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { isolate } from "../helpers/isolated.js";
import type { Child } from "../helpers/processes.js";
import { meterServerCpu, processCpuMs } from "./process-cpu.js";
import { fixedSize, median, round, type Row } from "./stats.js";
import { triggerInBatches, waitForRuns } from "./runs.js";
import { benchClient, startWorkerProcess, stopAll, TRIGGER_BATCH, waitReady, WORKER_CONCURRENCY, WORKER_FLOW } from "./workers.js";

const SAMPLE_MS = 100;
/** How long an idle worker is watched: long enough for start-up garbage to be collected. */
const IDLE_MS = fixedSize("AX_BENCH_IDLE_MS", 3000);
export const RSS_GOAL_MB = 200;

export interface MemoryResult {
  queued: number;
  /** Median RSS of a ready worker with nothing to do. */
  idleMb: number;
  /** Largest RSS sampled while a fresh worker drained the backlog. */
  peakMb: number;
  /** The kernel's own high-water mark of that worker (VmHWM), which no sampling interval can miss. */
  hwmMb: number;
  afterMb: number;
  /** Worker ready to the last run's `finished_at`. */
  drainMs: number;
  samples: number;
  /** CPU per task while draining: the worker process, and PostgreSQL's and Redis's processes when they run on this machine. */
  cpuMsPerTask: { worker: number; postgres: number | undefined; redis: number | undefined };
}

export function queuedRuns(): number {
  return fixedSize("AX_BENCH_QUEUED_RUNS", 10_000);
}

/** A /proc/<pid>/status field in MB (Linux); undefined once the process is gone. */
function statusMb(pid: number, field: "VmRSS" | "VmHWM"): number | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/status`, "utf8");
  } catch {
    return undefined;
  }
  const kb = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(text)?.[1];
  if (kb === undefined) throw new Error(`no ${field} in /proc/${pid}/status: the memory scenario needs Linux`);
  return Number(kb) / 1024;
}

/** RSS of `pid` every SAMPLE_MS until stopped. */
function sampleRss(pid: number): { samples: number[]; stop(): void } {
  const samples: number[] = [];
  const take = () => {
    const mb = statusMb(pid, "VmRSS");
    if (mb !== undefined) samples.push(mb);
  };
  take();
  const timer = setInterval(take, SAMPLE_MS);
  return { samples, stop: () => clearInterval(timer) };
}

/**
 * Memory of one worker process (concurrency 100) that starts with `queued` runs already waiting
 * for it: triggered while no worker runs. The idle figure comes from an earlier worker on the
 * same, still empty, schema (which also registers the flow), since a worker that starts with a
 * backlog is never idle.
 */
export async function workerMemory(queued: number, log: (message: string) => void): Promise<MemoryResult> {
  const env = isolate("mem");
  const client = benchClient(env);
  const workers: Child[] = [];
  try {
    log(`worker memory: an idle worker process for ${IDLE_MS} ms`);
    const idle = startWorkerProcess(env);
    workers.push(idle);
    await waitReady(idle);
    const idleSampler = sampleRss(idle.process.pid!);
    await sleep(IDLE_MS);
    idleSampler.stop();
    await idle.stop(10_000);

    log(`worker memory: ${queued} runs queued with no worker, then one worker process (concurrency ${WORKER_CONCURRENCY}) drains them`);
    const ids = await triggerInBatches(client, WORKER_FLOW, queued, TRIGGER_BATCH, "queued");
    const [started] = await env.sql<{ n: number }>("select count(*)::int as n from attempts");
    if (started!.n > 0) throw new Error(`${started!.n} attempts started with no worker running: the backlog is not a backlog`);
    const draining = startWorkerProcess(env);
    workers.push(draining);
    const pid = draining.process.pid!;
    const sampler = sampleRss(pid);
    try {
      await waitReady(draining);
      const readyAt = Date.now();
      const workerCpuBefore = processCpuMs(pid) ?? Number.NaN;
      const servers = meterServerCpu();
      const last = await waitForRuns(env, ids, 10 * 60_000);
      const workerCpu = (processCpuMs(pid) ?? Number.NaN) - workerCpuBefore;
      const serverCpu = servers(queued);
      const hwmMb = statusMb(pid, "VmHWM") ?? Number.NaN;
      await sleep(SAMPLE_MS);
      const afterMb = sampler.samples.at(-1) ?? Number.NaN;
      return {
        queued,
        idleMb: median(idleSampler.samples),
        peakMb: Math.max(...sampler.samples),
        hwmMb,
        afterMb,
        drainMs: last - readyAt,
        samples: sampler.samples.length,
        cpuMsPerTask: {
          worker: workerCpu / queued,
          postgres: serverCpu.postgres,
          redis: serverCpu.redis,
        },
      };
    } finally {
      sampler.stop();
    }
  } finally {
    await stopAll(workers);
    await client.close();
    await env.cleanup();
  }
}

const cpuText = (ms: number | undefined) => (ms === undefined ? "not on this machine" : `${round(ms, 3)} ms`);

export function memoryRows(r: MemoryResult): Row[] {
  const cpu = r.cpuMsPerTask;
  return [
    {
      name: `worker RSS peak, ${r.queued} queued runs`,
      value: `${round(r.peakMb)} MB`,
      vsBaseline: "-",
      detail: `goal < ${RSS_GOAL_MB} MB; idle ${round(r.idleMb)} MB, after draining ${round(r.afterMb)} MB, kernel high-water mark ${round(r.hwmMb)} MB; ${r.samples} samples ${SAMPLE_MS} ms apart; drained in ${Math.round(r.drainMs)} ms (${Math.round((r.queued / r.drainMs) * 1000)} /s)`,
    },
    {
      name: "worker process CPU per task, draining",
      value: `${round(cpu.worker, 3)} ms`,
      vsBaseline: "-",
      detail: `the same drain, from /proc: PostgreSQL ${cpuText(cpu.postgres)}, Redis ${cpuText(cpu.redis)} per task (server processes on this machine; a process that exited meanwhile is not counted)`,
    },
  ];
}

export function memoryJson(r: MemoryResult): Record<string, number> {
  const cpu = r.cpuMsPerTask;
  return {
    worker_rss_peak_mb: round(r.peakMb),
    worker_rss_idle_mb: round(r.idleMb),
    worker_cpu_ms_per_task: round(cpu.worker, 3),
    ...(cpu.postgres === undefined ? {} : { pg_cpu_ms_per_task: round(cpu.postgres, 3) }),
    ...(cpu.redis === undefined ? {} : { redis_cpu_ms_per_task: round(cpu.redis, 3) }),
  };
}
