import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import { isolate } from "../helpers/isolated.js";
import { startChild, type Child } from "../helpers/processes.js";
import { meterServerCpu, processCpuMs, type ServerCpu } from "./process-cpu.js";
import { fixedSize, round, type Row } from "./stats.js";
import { startWorkerProcess, stopAll, waitReady, WORKER_CONCURRENCY } from "./workers.js";

const BULLMQ_WORKER = fileURLToPath(new URL("../fixtures/bullmq-bench-worker.mjs", import.meta.url));

/** Task queues the idle worker serves: what an idle worker costs grows with them. */
const QUEUES = fixedSize("AX_BENCH_IDLE_QUEUES", 20);
/**
 * How long each idle process is metered, after twice as long to settle from its start: a worker
 * process was still warming up 10 to 20 s after it was ready (19–24 ms of CPU a second there,
 * 10–14 from 20 s on), in threads a profile of its JavaScript does not show.
 */
const SECONDS = fixedSize("AX_BENCH_IDLE_SECONDS", 10);

/** What one worker process with nothing to run costs, each second. */
export interface IdleCost {
  /** The worker process's own CPU, ms a second. */
  cpuMs: number;
  /** Commands Redis ran a second, every client's (the bench itself reads two INFOs). */
  redisCommands: number;
  /** The servers' CPU, ms a second (every PostgreSQL and Redis process of the machine). */
  servers: ServerCpu;
}

export interface IdleResult {
  queues: number;
  seconds: number;
  ax: IdleCost;
  bullmq: IdleCost;
}

async function commandsProcessed(redis: Redis): Promise<number> {
  const line = (await redis.info("stats")).split("\n").find((l) => l.startsWith("total_commands_processed:"));
  return Number(line?.split(":")[1]);
}

/** Meters `child`, ready and settled, for SECONDS. */
async function meter(child: Child, redis: Redis): Promise<IdleCost> {
  await waitReady(child);
  await sleep(2 * SECONDS * 1000);
  const pid = child.process.pid!;
  const servers = meterServerCpu();
  const cpuBefore = processCpuMs(pid) ?? 0;
  const commandsBefore = await commandsProcessed(redis);
  await sleep(SECONDS * 1000);
  const cpuMs = ((processCpuMs(pid) ?? cpuBefore) - cpuBefore) / SECONDS;
  const redisCommands = ((await commandsProcessed(redis)) - commandsBefore) / SECONDS;
  return { cpuMs, redisCommands, servers: servers(SECONDS) };
}

/**
 * One worker process serving QUEUES task queues and given no work, against one process of raw
 * BullMQ `Worker`s on as many queues: the upkeep a cluster pays at rest (looks at empty queues,
 * stalled-job checks, heartbeats, lease renewals), which throughput scenarios hide.
 */
export async function idleCost(log: (message: string) => void): Promise<IdleResult> {
  const env = isolate("idle");
  const redis = new Redis(env.redis);
  const children: Child[] = [];
  try {
    log(`raw BullMQ: one process of ${QUEUES} idle Workers, metered for ${SECONDS} s`);
    const bullmqEnv = {
      AX_REDIS: env.redis,
      AX_PREFIX: env.prefix,
      AX_QUEUE: "bullmq_idle",
      AX_QUEUES: String(QUEUES),
      AX_CONCURRENCY: String(WORKER_CONCURRENCY),
    };
    children.push(startChild(process.execPath, [BULLMQ_WORKER], bullmqEnv));
    const bullmq = await meter(children[0]!, redis);
    await stopAll(children.splice(0));
    log(`ax: one idle worker process serving ${QUEUES} task queues, metered for ${SECONDS} s`);
    children.push(startWorkerProcess(env, { AX_TASKS: String(QUEUES) }));
    const ax = await meter(children[0]!, redis);
    return { queues: QUEUES, seconds: SECONDS, ax, bullmq };
  } finally {
    await stopAll(children);
    redis.disconnect();
    await env.cleanup();
  }
}

export function idleRows(r: IdleResult): Row[] {
  const queues = `${r.queues} queue${r.queues === 1 ? "" : "s"}`;
  const ms = (v: number | undefined) => (v === undefined ? "n/a" : `${round(v, 2)} ms/s`);
  return [
    {
      name: `idle worker, ${queues}: CPU a second`,
      value: ms(r.ax.cpuMs),
      vsBaseline: `${round(r.ax.cpuMs / r.bullmq.cpuMs, 1)}x cpu`,
      detail: `raw BullMQ ${ms(r.bullmq.cpuMs)} (${r.queues} BullMQ Workers in one process); metered ${r.seconds} s after ${2 * r.seconds} s to settle`,
    },
    {
      name: `idle worker, ${queues}: Redis`,
      value: `${round(r.ax.redisCommands)} cmd/s`,
      vsBaseline: `${round(r.ax.redisCommands / r.bullmq.redisCommands, 1)}x`,
      detail: `raw BullMQ ${round(r.bullmq.redisCommands)} commands/s; Redis CPU ${ms(r.ax.servers.redis)} against ${ms(r.bullmq.servers.redis)}, PostgreSQL ${ms(r.ax.servers.postgres)} (every server process of the machine)`,
    },
  ];
}

export function idleJson(r: IdleResult): Record<string, number> {
  return {
    idle_queues: r.queues,
    idle_worker_cpu_ms_per_s: round(r.ax.cpuMs, 2),
    idle_bullmq_cpu_ms_per_s: round(r.bullmq.cpuMs, 2),
    idle_redis_commands_per_s: round(r.ax.redisCommands, 1),
    idle_bullmq_redis_commands_per_s: round(r.bullmq.redisCommands, 1),
  };
}
