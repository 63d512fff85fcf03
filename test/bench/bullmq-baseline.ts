import { setTimeout as sleep } from "node:timers/promises";
import { Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
import { since, snapshot, type Counts } from "./counters.js";
import { meterServerCpu, type ServerCpu } from "./process-cpu.js";
import { median, medianRound, percentile, type Rounds } from "./stats.js";

export interface BaselineRun {
  jobs: number;
  ms: number;
  jobsPerS: number;
  counts: Counts;
  cpuMsPerTask: number;
  /** Redis's CPU per job over the same span (BullMQ alone uses no PostgreSQL). */
  serverCpu: ServerCpu;
}

export interface BaselineResult {
  /** `addBulk` while the worker drains: first add -> last completion. */
  endToEnd: Rounds<BaselineRun>;
  /** Jobs added first, then the worker started: worker start -> last completion. */
  drain: Rounds<BaselineRun>;
}

const ADD_CHUNK = 1000;

interface BaselineOptions {
  redis: string;
  prefix: string;
  jobs: number;
  concurrency: number;
  /** Times each of end to end and drain only runs; the median is reported. */
  rounds: number;
}

/** Raw BullMQ, no PostgreSQL, one Worker with the given concurrency: end to end, then drain only, each in rounds. */
export async function bullmqBaseline(options: BaselineOptions): Promise<BaselineResult> {
  const connection = new Redis(options.redis, { maxRetriesPerRequest: null });
  const queue = new Queue("bullmq_baseline", { connection, prefix: options.prefix });
  try {
    await warmUp(connection, queue, options);
    const rate = (run: BaselineRun) => run.jobsPerS;
    const endToEnd = await medianRound(options.rounds, () => timedDrain(connection, queue, options, "together"), rate);
    const drain = await medianRound(options.rounds, () => timedDrain(connection, queue, options, "added-first"), rate);
    return { endToEnd, drain };
  } finally {
    await queue.obliterate({ force: true }).catch(() => {});
    await queue.close();
    connection.disconnect();
  }
}

async function addAll(queue: Queue, jobs: number): Promise<void> {
  for (let added = 0; added < jobs; added += ADD_CHUNK) {
    const n = Math.min(ADD_CHUNK, jobs - added);
    await queue.addBulk(
      Array.from({ length: n }, (_, i) => ({ name: "noop", data: { i: added + i }, opts: { removeOnComplete: true, removeOnFail: true } })),
    );
  }
}

async function timedDrain(
  connection: Redis,
  queue: Queue,
  options: BaselineOptions,
  mode: "together" | "added-first",
): Promise<BaselineRun> {
  if (mode === "added-first") await addAll(queue, options.jobs);
  let done = 0;
  let finish!: () => void;
  let fail!: (error: Error) => void;
  const allDone = new Promise<void>((resolve, reject) => {
    finish = resolve;
    fail = reject;
  });
  const worker = new Worker(queue.name, async () => null, {
    connection,
    prefix: options.prefix,
    concurrency: options.concurrency,
    autorun: false,
  });
  worker.on("completed", () => {
    done += 1;
    if (done === options.jobs) finish();
  });
  worker.on("failed", (_job, err) => fail(new Error(`baseline job failed: ${err.message}`)));
  const before = snapshot();
  const cpuBefore = process.cpuUsage();
  const servers = meterServerCpu();
  const t0 = performance.now();
  void worker.run();
  if (mode === "together") await addAll(queue, options.jobs);
  await allDone;
  const ms = performance.now() - t0;
  const counts = since(before);
  const cpu = process.cpuUsage(cpuBefore);
  const serverCpu = { redis: servers(options.jobs).redis };
  await worker.close();
  return {
    jobs: options.jobs,
    ms,
    jobsPerS: (options.jobs / ms) * 1000,
    counts,
    cpuMsPerTask: (cpu.user + cpu.system) / 1000 / options.jobs,
    serverCpu,
  };
}

/** A short untimed drain so the Lua scripts are loaded and the JIT is warm, as for ax. */
async function warmUp(connection: Redis, queue: Queue, options: { prefix: string; concurrency: number }): Promise<void> {
  const jobs = 1000;
  await queue.addBulk(Array.from({ length: jobs }, () => ({ name: "noop", data: {}, opts: { removeOnComplete: true } })));
  let done = 0;
  await new Promise<void>((resolve) => {
    const worker = new Worker(queue.name, async () => null, { connection, prefix: options.prefix, concurrency: options.concurrency });
    worker.on("completed", () => {
      if (++done === jobs) void worker.close().then(resolve);
    });
  });
}

export interface BaselineChain {
  medianMs: number;
  samplesMs: number[];
}

/**
 * Raw BullMQ chain: each job's processor adds the next one, as ax's worker enqueues a node's
 * dependant after completing it; from the first add to the last job's completion.
 */
export async function bullmqChain(options: {
  redis: string;
  prefix: string;
  length: number;
  repeats: number;
  concurrency: number;
}): Promise<BaselineChain> {
  const connection = new Redis(options.redis, { maxRetriesPerRequest: null });
  const queue = new Queue("bullmq_chain", { connection, prefix: options.prefix });
  const finished = new Map<string, () => void>();
  const worker = new Worker(
    queue.name,
    async (job) => {
      const { chain, step } = job.data as { chain: string; step: number };
      if (step + 1 < options.length) await queue.add("noop", { chain, step: step + 1 }, { removeOnComplete: true });
      return null;
    },
    { connection, prefix: options.prefix, concurrency: options.concurrency },
  );
  worker.on("completed", (job) => {
    const { chain, step } = job.data as { chain: string; step: number };
    if (step + 1 === options.length) finished.get(chain)?.();
  });
  try {
    const samples: number[] = [];
    for (let i = -1; i < options.repeats; i++) {
      const chain = `c${i}`;
      const done = new Promise<void>((resolve) => finished.set(chain, resolve));
      const t0 = performance.now();
      await queue.add("noop", { chain, step: 0 }, { removeOnComplete: true });
      await done;
      // Round -1 warms up the worker and scripts and is not counted.
      if (i >= 0) samples.push(performance.now() - t0);
    }
    return { medianMs: median(samples), samplesMs: samples };
  } finally {
    await worker.close();
    await queue.obliterate({ force: true }).catch(() => {});
    await queue.close();
    connection.disconnect();
  }
}

export interface BaselineLatency {
  p50: number;
  p99: number;
}

/** Raw BullMQ add -> processor start, one job at a time with a pause between. */
export async function bullmqLatency(options: {
  redis: string;
  prefix: string;
  jobs: number;
  gapMs: number;
  concurrency: number;
}): Promise<BaselineLatency> {
  const connection = new Redis(options.redis, { maxRetriesPerRequest: null });
  const queue = new Queue("bullmq_latency", { connection, prefix: options.prefix });
  const sentAt = new Map<number, number>();
  const samples: number[] = [];
  const worker = new Worker(
    queue.name,
    async (job) => {
      const { i } = job.data as { i: number };
      if (i >= 0) samples.push(performance.now() - sentAt.get(i)!);
      return null;
    },
    { connection, prefix: options.prefix, concurrency: options.concurrency },
  );
  try {
    for (let i = -20; i < options.jobs; i++) {
      sentAt.set(i, performance.now());
      await queue.add("noop", { i }, { removeOnComplete: true });
      await sleep(options.gapMs);
    }
    const deadline = Date.now() + 30_000;
    while (samples.length < options.jobs) {
      if (Date.now() > deadline) throw new Error(`BullMQ latency: ${samples.length}/${options.jobs} jobs started within 30 s`);
      await sleep(10);
    }
    return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
  } finally {
    await worker.close();
    await queue.obliterate({ force: true }).catch(() => {});
    await queue.close();
    connection.disconnect();
  }
}
