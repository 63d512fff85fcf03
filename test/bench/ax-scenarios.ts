import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { ax, Runtime, type Client, type Ref } from "ax-scheduler";
import type { Isolated } from "../helpers/isolated.js";
import { since, snapshot, type Counts } from "./counters.js";
import { meterServerCpu, type ServerCpu } from "./process-cpu.js";
import { triggerInBatches, waitForRuns } from "./runs.js";
import { median, percentile } from "./stats.js";
import { meterWal } from "./wal.js";

const noop = ax.task({ name: "bench_noop" }, (..._args: unknown[]) => null);

const single = ax.flow({ name: "bench_single" }, (input) => {
  noop(input);
});
/** The article's shape: a -> b(a) -> c(a, b), so c is a fan-in of two. */
const diamond = ax.flow({ name: "bench_diamond" }, (input) => {
  const a = noop(input);
  const b = noop(a);
  noop(a, b);
});
export const CHAIN_LENGTH = 40;
const chain = ax.flow({ name: "bench_chain40" }, (input) => {
  let previous: Ref<unknown> = noop(input);
  for (let i = 1; i < CHAIN_LENGTH; i++) previous = noop(previous);
});
/** 40 tasks of 10 ms each: 400 ms of work, so the rest is what each hop costs. */
const sleep10 = ax.task({ name: "bench_sleep10" }, async (..._args: unknown[]) => {
  await sleep(10);
  return null;
});
const chainOf10ms = ax.flow({ name: "bench_chain40_10ms" }, (input) => {
  let previous: Ref<unknown> = sleep10(input);
  for (let i = 1; i < CHAIN_LENGTH; i++) previous = sleep10(previous);
});
const latency = ax.flow({ name: "bench_latency" }, (input) => {
  noop(input);
});
/** Served only by the Runtime the drain scenario starts after triggering: its runs wait in Redis until then. */
const drainNoop = ax.task({ name: "bench_drain_noop" }, (..._args: unknown[]) => null);
const drain = ax.flow({ name: "bench_drain" }, (input) => {
  drainNoop(input);
});
/** A no-op under a task concurrency limit and a pool: every fetch takes a permit from the gate first. */
export const LIMITED_CONCURRENCY = 50;
export const LIMITED_POOL = 80;
const limitedNoop = ax.task({ name: "bench_limited", concurrency: LIMITED_CONCURRENCY, pool: "bench_db" }, (..._args: unknown[]) => null);
const limited = ax.flow({ name: "bench_limited" }, (input) => {
  limitedNoop(input);
});
/** A no-op under `concurrency: { max: 1, key }` over 100 keys: each fetch reads the input and takes the key's permit. */
export const KEYED_KEYS = 100;
const keyedNoop = ax.task(
  { name: "bench_keyed", concurrency: { max: 1, key: (input: { i: number }) => input.i % KEYED_KEYS } },
  (..._args: unknown[]) => null,
);
const keyed = ax.flow({ name: "bench_keyed" }, (input) => {
  keyedNoop(input);
});
const warmup = ax.flow({ name: "bench_warmup" }, (input) => {
  const a = noop(input);
  noop(a, noop(a));
});

/** The runtime.yaml of the bench's Runtime, removed with its schema. */
export const benchConfigFile = (env: Isolated): string => join(tmpdir(), `${env.prefix}-runtime.yaml`);

export function benchRuntime(env: Isolated, concurrency: number): Runtime {
  const config = benchConfigFile(env);
  writeFileSync(config, `pools:\n  bench_db: ${LIMITED_POOL}\n`);
  return new Runtime({
    config,
    storage: env.storage,
    redis: env.redis,
    prefix: env.prefix,
    roles: ["worker", "coordinator"],
    maxConcurrency: concurrency,
    logLevel: process.env.AX_LOG_LEVEL ?? "warn",
    flows: [single, diamond, chain, chainOf10ms, latency, warmup, limited, keyed],
  });
}

function drainRuntime(env: Isolated, concurrency: number): Runtime {
  return new Runtime({
    storage: env.storage,
    redis: env.redis,
    prefix: env.prefix,
    roles: ["worker"],
    maxConcurrency: concurrency,
    logLevel: process.env.AX_LOG_LEVEL ?? "warn",
    flows: [drain],
  });
}

export interface Throughput {
  runs: number;
  tasks: number;
  /** First trigger to the last run's `finished_at` in PostgreSQL. */
  ms: number;
  tasksPerS: number;
  /** How long the triggering alone took (all runs written and their first jobs enqueued). */
  triggerMs: number;
  counts: Counts;
  /** CPU time (user + system) of this process per task: triggering, executing and advancing. */
  cpuMsPerTask: number;
  /** The servers' CPU per task over the same span. */
  serverCpu: ServerCpu;
  /** PostgreSQL's write-ahead log per task over the same span, in bytes. */
  walBytesPerTask: number;
}

/** Triggers `runs` runs in batches while the workers run, and waits for all to succeed. */
async function throughput(client: Client, env: Isolated, flow: string, nodes: number, runs: number, batch: number): Promise<Throughput> {
  const before = snapshot();
  const cpuBefore = process.cpuUsage();
  const servers = meterServerCpu();
  const wal = await meterWal(env);
  const start = Date.now();
  const ids = await triggerInBatches(client, flow, runs, batch);
  const triggerMs = Date.now() - start;
  const last = await waitForRuns(env, ids, 10 * 60_000);
  const counts = since(before);
  const cpu = process.cpuUsage(cpuBefore);
  const ms = last - start;
  const tasks = runs * nodes;
  return {
    runs,
    tasks,
    ms,
    tasksPerS: (tasks / ms) * 1000,
    triggerMs,
    counts,
    cpuMsPerTask: (cpu.user + cpu.system) / 1000 / tasks,
    serverCpu: servers(tasks),
    walBytesPerTask: await wal(tasks),
  };
}

export async function warmUp(client: Client, env: Isolated, runs: number, batch: number): Promise<void> {
  await throughput(client, env, "bench_warmup", 3, runs, batch);
}

export function singleNodeThroughput(client: Client, env: Isolated, runs: number, batch: number): Promise<Throughput> {
  return throughput(client, env, "bench_single", 1, runs, batch);
}

export function limitedThroughput(client: Client, env: Isolated, runs: number, batch: number): Promise<Throughput> {
  return throughput(client, env, "bench_limited", 1, runs, batch);
}

export function keyedThroughput(client: Client, env: Isolated, runs: number, batch: number): Promise<Throughput> {
  return throughput(client, env, "bench_keyed", 1, runs, batch);
}

/**
 * Drain only: `runs` runs are triggered first while no worker serves their task, then a worker
 * Runtime is started; from its start() call to the last run's `finished_at`.
 */
export async function drainThroughput(
  client: Client,
  env: Isolated,
  runs: number,
  batch: number,
  concurrency: number,
): Promise<Throughput> {
  // A first worker registers the flow's version so that the client can trigger it, then leaves.
  const registrar = drainRuntime(env, concurrency);
  await registrar.start();
  await registrar.stop();
  const ids = await triggerInBatches(client, "bench_drain", runs, batch);
  const worker = drainRuntime(env, concurrency);
  const before = snapshot();
  const cpuBefore = process.cpuUsage();
  const servers = meterServerCpu();
  const wal = await meterWal(env);
  const start = Date.now();
  await worker.start();
  try {
    const last = await waitForRuns(env, ids, 10 * 60_000);
    // Read before the worker stops: its PostgreSQL backends exit with its pool, and their CPU with them.
    const serverCpu = servers(runs);
    const counts = since(before);
    const cpu = process.cpuUsage(cpuBefore);
    const ms = last - start;
    return {
      runs,
      tasks: runs,
      ms,
      tasksPerS: (runs / ms) * 1000,
      triggerMs: 0,
      counts,
      cpuMsPerTask: (cpu.user + cpu.system) / 1000 / runs,
      serverCpu,
      walBytesPerTask: await wal(runs),
    };
  } finally {
    await worker.stop();
  }
}

export function diamondThroughput(client: Client, env: Isolated, runs: number, batch: number): Promise<Throughput> {
  return throughput(client, env, "bench_diamond", 3, runs, batch);
}

export interface ChainResult {
  /** Median of trigger -> success from PostgreSQL (runs.created_at -> runs.finished_at). */
  medianMs: number;
  /** Median as seen by the caller: before triggerFlow until a poll sees `success`. */
  observedMedianMs: number;
  samplesMs: number[];
  /** One node's start to the next one's, over every hop of every sample. */
  handoff: { p50: number; p99: number; max: number };
}

export const CHAIN_FLOWS = { noop: "bench_chain40", sleep10: "bench_chain40_10ms" } as const;

/**
 * Waits for runs to end by their cluster events, so that no query every few milliseconds takes
 * PostgreSQL's time from the run being timed; a slow poll still ends the wait if an event is lost.
 */
function runEnds(env: Isolated): { of(runId: string): Promise<void>; close(): void } {
  const endedRuns = new Set<string>();
  const waiting = new Map<string, () => void>();
  const off = ax.onEvent((event) => {
    if (event.name !== "run_succeeded" && event.name !== "run_failed" && event.name !== "run_cancelled") return;
    endedRuns.add(event.runId);
    waiting.get(event.runId)?.();
  });
  return {
    async of(runId) {
      const seen = new Promise<void>((resolve) => {
        waiting.set(runId, resolve);
        if (endedRuns.has(runId)) resolve();
      });
      for (;;) {
        const event = await Promise.race([seen.then(() => true), sleep(250).then(() => false)]);
        if (event) break;
        const [row] = await env.sql<{ status: string }>(`select status from runs where id = $1`, [runId]);
        if (row!.status !== "pending" && row!.status !== "running") break;
      }
      waiting.delete(runId);
    },
    close: off,
  };
}

export async function chainWallTime(client: Client, env: Isolated, repeats: number, flow: string = CHAIN_FLOWS.noop): Promise<ChainResult> {
  const stored: number[] = [];
  const observed: number[] = [];
  const ended = runEnds(env);
  for (let i = 0; i < repeats; i++) {
    const t0 = performance.now();
    const runId = await client.triggerFlow(flow, { i });
    await ended.of(runId);
    observed.push(performance.now() - t0);
    const [row] = await env.sql<{ status: string; ms: number | null }>(
      `select status, extract(epoch from (finished_at - created_at)) * 1000 as ms from runs where id = $1`,
      [runId],
    );
    if (row!.status !== "success") throw new Error(`chain run ${runId} ended ${row!.status}`);
    stored.push(Number(row!.ms));
  }
  ended.close();
  // A chain's next node starts in the statement that completes the one before it: its started_at is
  // that statement's time. So one start to the next holds everything a hop costs (the function,
  // its completion's statement, handing the next node to its task). finished_at would not do: it is
  // the worker's measure of the function rounded up to the millisecond.
  const handoffs = await env.sql<{ ms: number }>(
    `select extract(epoch from (next_started - started_at)) * 1000 as ms
     from (select n.started_at, lead(n.started_at) over (partition by n.run_id order by n.started_at) as next_started
           from node_runs n join runs r on r.id = n.run_id where r.flow = $1) h
     where next_started is not null`,
    [flow],
  );
  const gaps = handoffs.map((h) => Number(h.ms));
  return {
    medianMs: median(stored),
    observedMedianMs: median(observed),
    samplesMs: stored,
    handoff: { p50: percentile(gaps, 50), p99: percentile(gaps, 99), max: Math.max(...gaps) },
  };
}

export interface LatencyResult {
  p50: number;
  p99: number;
  max: number;
  runs: number;
}

/**
 * Trigger -> first attempt start, one trigger at a time with a pause between, so it measures
 * the path of one run through an idle-ish system rather than queueing behind a backlog.
 */
export async function triggerToStart(client: Client, env: Isolated, runs: number, gapMs: number): Promise<LatencyResult> {
  const ids: string[] = [];
  for (let i = 0; i < runs; i++) {
    ids.push(await client.triggerFlow("bench_latency", { i }));
    await sleep(gapMs);
  }
  await waitForRuns(env, ids, 60_000);
  const rows = await env.sql<{ ms: number }>(
    `select extract(epoch from (a.started_at - r.created_at)) * 1000 as ms
     from runs r join attempts a on a.run_id = r.id and a.n = 1
     where r.flow = 'bench_latency'`,
  );
  const samples = rows.map((r) => Number(r.ms));
  return { p50: percentile(samples, 50), p99: percentile(samples, 99), max: Math.max(...samples), runs: samples.length };
}

export interface AttemptHealth {
  attempts: number;
  /** Attempts that did not end `success`: none are expected for no-op tasks. */
  notSuccess: number;
  /** Nodes that needed more than one attempt (a lost BullMQ lock or a crash takeover). */
  retriedNodes: number;
}

/** A sanity check over every run of the bench: no-op tasks should succeed on their first attempt. */
export async function attemptHealth(env: Isolated): Promise<AttemptHealth> {
  const [row] = await env.sql<{ attempts: number; not_success: number; retried: number }>(
    `select count(*)::int as attempts,
            count(*) filter (where outcome is distinct from 'success')::int as not_success,
            count(distinct (run_id, node_key)) filter (where n > 1)::int as retried
     from attempts`,
  );
  return { attempts: row!.attempts, notSuccess: row!.not_success, retriedNodes: row!.retried };
}
