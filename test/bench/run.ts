// Logging must not dominate a no-op benchmark; set before the runtime builds its logger.
process.env.AX_LOG_LEVEL ??= "warn";

import { rmSync } from "node:fs";
import { availableParallelism } from "node:os";
import { isolate } from "../helpers/isolated.js";
import {
  attemptHealth,
  benchConfigFile,
  benchRuntime,
  chainWallTime,
  CHAIN_FLOWS,
  CHAIN_LENGTH,
  diamondThroughput,
  drainThroughput,
  KEYED_KEYS,
  keyedThroughput,
  LIMITED_CONCURRENCY,
  LIMITED_POOL,
  limitedThroughput,
  singleNodeThroughput,
  triggerToStart,
  warmUp,
  type AttemptHealth,
  type ChainResult,
  type LatencyResult,
  type Throughput,
} from "./ax-scenarios.js";
import {
  bullmqBaseline,
  bullmqChain,
  bullmqLatency,
  type BaselineChain,
  type BaselineLatency,
  type BaselineResult,
  type BaselineRun,
} from "./bullmq-baseline.js";
import { installCounters, perTask, printStatementTimes } from "./counters.js";
import { benchSizes, medianRound, printTable, round, roundsText, type BenchSizes, type Rounds } from "./stats.js";
import { historyJson, historyRows, historySizes, largeHistory, type HistoryResult } from "./large-history.js";
import { memoryJson, memoryRows, queuedRuns, workerMemory, type MemoryResult } from "./memory.js";
import { scalingJson, scalingRows, scalingRuns, workerScaling, type ScalingResult } from "./scaling.js";
import { sparseJson, sparseLoad, sparseRows, sparseRuns, type SparseResult } from "./sparse.js";
import { idleCost, idleJson, idleRows, type IdleResult } from "./idle.js";
import { benchSkips, type Skippable } from "./stats.js";
import { totalCpu, type ServerCpu } from "./process-cpu.js";
import { assertBuilt } from "./workers.js";

interface Results {
  baseline: BaselineResult;
  baselineChain: BaselineChain;
  baselineLatency: BaselineLatency;
  single: Rounds<Throughput>;
  drain: Rounds<Throughput>;
  /** Drain only with other worker slot counts (`maxConcurrency`): Runtime's default and a wide one. */
  slots: { concurrency: number; drain: Rounds<Throughput> }[];
  limited: Rounds<Throughput>;
  keyed: Rounds<Throughput>;
  diamond: Rounds<Throughput>;
  chain: ChainResult;
  chain10ms: ChainResult;
  latency: LatencyResult;
  health: AttemptHealth;
  /** The scenarios below are absent when AX_BENCH_SKIP names them. */
  scaling?: ScalingResult;
  sparse?: SparseResult;
  idle?: IdleResult;
  memory?: MemoryResult;
  history?: HistoryResult;
}

/**
 * Worker slot counts the drain is also measured with: Runtime's default and three times the bench's.
 * With few slots each attempt's statements carry few others, so CPU per task rises and the slots
 * wait on the round trips; the sweep shows how much of the gap to BullMQ is that.
 */
const SLOT_SWEEP = [10, 300];

const log = (message: string) => console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}`);

/** Every scenario on one Redis and one PostgreSQL, in a private schema and key prefix removed at the end. */
async function measure(sizes: BenchSizes): Promise<Results> {
  const env = isolate("bench");
  log(`sizes ${JSON.stringify(sizes)}; PG schema ${env.schema}, Redis prefix ${env.prefix}`);
  try {
    const redis = { redis: env.redis, prefix: env.prefix, concurrency: sizes.concurrency };
    log(
      `BullMQ: ${sizes.bullmqJobs} no-op jobs x ${sizes.rounds} rounds each way, concurrency ${sizes.concurrency}; chain of ${CHAIN_LENGTH}; add -> start`,
    );
    const baseline = await bullmqBaseline({ ...redis, jobs: sizes.bullmqJobs, rounds: sizes.rounds });
    const baselineChain = await bullmqChain({ ...redis, length: CHAIN_LENGTH, repeats: sizes.chainRepeats });
    const baselineLatency = await bullmqLatency({ ...redis, jobs: sizes.latencyRuns, gapMs: sizes.latencyGapMs });

    const runtime = benchRuntime(env, sizes.concurrency);
    await runtime.start();
    try {
      const client = runtime.client();
      const rounds = (measure: () => Promise<Throughput>) => medianRound(sizes.rounds, measure, (t) => t.tasksPerS);
      log("ax warm-up");
      await warmUp(client, env, Math.max(100, Math.round(sizes.axRuns / 10)), sizes.triggerBatch);
      log(`ax single-node: ${sizes.axRuns} runs, triggerFlows of ${sizes.triggerBatch}, ${sizes.rounds} rounds`);
      const single = await rounds(() => singleNodeThroughput(client, env, sizes.axRuns, sizes.triggerBatch));
      log(`ax single-node, drain only: ${sizes.axRuns} runs triggered, then a worker started, ${sizes.rounds} rounds`);
      const drain = await rounds(() => drainThroughput(client, env, sizes.axRuns, sizes.triggerBatch, sizes.concurrency));
      const slots: Results["slots"] = [];
      for (const concurrency of SLOT_SWEEP) {
        log(`ax single-node, drain only with maxConcurrency ${concurrency}: ${sizes.axRuns} runs, ${sizes.rounds} rounds`);
        slots.push({ concurrency, drain: await rounds(() => drainThroughput(client, env, sizes.axRuns, sizes.triggerBatch, concurrency)) });
      }
      log(`ax single-node under concurrency ${LIMITED_CONCURRENCY} and pool ${LIMITED_POOL}: ${sizes.axRuns} runs, ${sizes.rounds} rounds`);
      const limited = await rounds(() => limitedThroughput(client, env, sizes.axRuns, sizes.triggerBatch));
      log(`ax single-node under concurrency { max: 1, key } over ${KEYED_KEYS} keys: ${sizes.axRuns} runs, ${sizes.rounds} rounds`);
      const keyed = await rounds(() => keyedThroughput(client, env, sizes.axRuns, sizes.triggerBatch));
      log(`ax diamond: ${sizes.diamondRuns} runs x 3 nodes, ${sizes.rounds} rounds`);
      const diamond = await rounds(() => diamondThroughput(client, env, sizes.diamondRuns, sizes.triggerBatch));
      log(`ax chain of ${CHAIN_LENGTH}: ${sizes.chainRepeats} runs, one at a time`);
      const chain = await chainWallTime(client, env, sizes.chainRepeats);
      log(`ax chain of ${CHAIN_LENGTH} tasks of 10 ms: ${sizes.chainRepeats} runs, one at a time`);
      const chain10ms = await chainWallTime(client, env, sizes.chainRepeats, CHAIN_FLOWS.sleep10);
      log(`ax trigger -> start: ${sizes.latencyRuns} runs, one at a time, ${sizes.latencyGapMs} ms apart`);
      const latency = await triggerToStart(client, env, sizes.latencyRuns, sizes.latencyGapMs);
      const health = await attemptHealth(env);
      return { baseline, baselineChain, baselineLatency, single, drain, slots, limited, keyed, diamond, chain, chain10ms, latency, health };
    } finally {
      await runtime.stop();
    }
  } finally {
    await env.cleanup();
    rmSync(benchConfigFile(env), { force: true });
    log("cleaned up schema and Redis keys");
  }
}

function throughputDetail(t: Rounds<Throughput>): string {
  const triggering = t.triggerMs > 0 ? ` (triggering ${t.triggerMs} ms)` : "";
  return `${t.runs} runs in ${Math.round(t.ms)} ms${triggering}; ${perTask(t.counts, t.tasks)}, WAL ${Math.round(t.walBytesPerTask)} B/task, ${cpuText(t.cpuMsPerTask, t.serverCpu)}${roundsText(t.roundRates)}`;
}

/** CPU per task of this process and of the servers: on two cores their sum, not any one of them, bounds throughput. */
function cpuText(nodeMs: number, servers: ServerCpu): string {
  const parts = [`node ${nodeMs.toFixed(2)}`];
  if (servers.postgres !== undefined) parts.push(`PostgreSQL ${servers.postgres.toFixed(2)}`);
  if (servers.redis !== undefined) parts.push(`Redis ${servers.redis.toFixed(2)}`);
  return `CPU ${parts.join(" + ")} = ${totalCpu(nodeMs, servers).toFixed(2)} ms/task`;
}

/** Separate worker processes and a large history, each in its own schema and prefix, after the scenarios above. */
async function measureAtScale(sizes: BenchSizes, skips: Set<Skippable>): Promise<Pick<Results, Skippable>> {
  const results: Pick<Results, Skippable> = {};
  if (!skips.has("scaling")) results.scaling = await workerScaling(scalingRuns(), log);
  if (!skips.has("sparse")) results.sparse = await sparseLoad(sparseRuns(), log);
  if (!skips.has("idle")) results.idle = await idleCost(log);
  if (!skips.has("memory")) results.memory = await workerMemory(queuedRuns(), log);
  if (!skips.has("history")) {
    results.history = await largeHistory({ ...historySizes(), concurrency: sizes.concurrency, gapMs: sizes.latencyGapMs }, log);
  }
  return results;
}

function report(r: Results): void {
  const base = r.baseline.endToEnd.jobsPerS;
  const baseDrain = r.baseline.drain.jobsPerS;
  const faster = (v: number, of = base) => `${(v / of).toFixed(2)}x`;
  const slower = (ax: number, bull: number) => `${(ax / bull).toFixed(1)}x time`;
  const bull = (b: Rounds<BaselineRun>) =>
    `${b.jobs} jobs in ${Math.round(b.ms)} ms; ${perTask(b.counts, b.jobs)}, ${cpuText(b.cpuMsPerTask, b.serverCpu)}${roundsText(b.roundRates)}`;
  const chainDetail = (c: ChainResult) =>
    `samples ${c.samplesMs.map((s) => Math.round(s)).join(", ")} ms; ${round(c.medianMs / CHAIN_LENGTH, 2)} ms/node; seen by caller ${round(c.observedMedianMs)} ms`;
  console.log("");
  printTable([
    { name: "BullMQ no-op jobs, addBulk + drain", value: `${Math.round(base)} /s`, vsBaseline: "1.00x", detail: bull(r.baseline.endToEnd) },
    { name: "BullMQ no-op jobs, drain only", value: `${Math.round(baseDrain)} /s`, vsBaseline: "1.00x", detail: bull(r.baseline.drain) },
    {
      name: "ax single-node flow, end to end",
      value: `${Math.round(r.single.tasksPerS)} /s`,
      vsBaseline: faster(r.single.tasksPerS),
      detail: throughputDetail(r.single),
    },
    {
      name: "ax single-node flow, drain only",
      value: `${Math.round(r.drain.tasksPerS)} /s`,
      vsBaseline: faster(r.drain.tasksPerS, baseDrain),
      detail: throughputDetail(r.drain),
    },
    ...r.slots.map(({ concurrency, drain }) => ({
      name: `ax drain only, maxConcurrency ${concurrency}`,
      value: `${Math.round(drain.tasksPerS)} /s`,
      vsBaseline: faster(drain.tasksPerS, baseDrain),
      detail: throughputDetail(drain),
    })),
    {
      name: `ax single-node, concurrency ${LIMITED_CONCURRENCY} + pool`,
      value: `${Math.round(r.limited.tasksPerS)} /s`,
      vsBaseline: faster(r.limited.tasksPerS),
      detail: throughputDetail(r.limited),
    },
    {
      name: `ax single-node, 1 per key (${KEYED_KEYS} keys)`,
      value: `${Math.round(r.keyed.tasksPerS)} /s`,
      vsBaseline: faster(r.keyed.tasksPerS),
      detail: throughputDetail(r.keyed),
    },
    {
      name: "ax 3-node diamond",
      value: `${Math.round(r.diamond.tasksPerS)} /s`,
      vsBaseline: faster(r.diamond.tasksPerS),
      detail: throughputDetail(r.diamond),
    },
    {
      name: `ax chain of ${CHAIN_LENGTH} no-ops, median`,
      value: `${round(r.chain.medianMs)} ms`,
      vsBaseline: slower(r.chain.medianMs, r.baselineChain.medianMs),
      detail: `BullMQ chain ${round(r.baselineChain.medianMs)} ms; ${chainDetail(r.chain)}`,
    },
    {
      name: `ax chain of ${CHAIN_LENGTH} x 10 ms, median`,
      value: `${round(r.chain10ms.medianMs)} ms`,
      vsBaseline: "",
      detail: `${CHAIN_LENGTH * 10} ms of work; ${chainDetail(r.chain10ms)}`,
    },
    {
      name: "ax hop (start -> next start) p50",
      value: `${round(r.chain.handoff.p50, 2)} ms`,
      vsBaseline: "",
      detail: `one node's start to the next over the no-op chains (the next node starts in the completing statement): p99 ${round(r.chain.handoff.p99, 2)} ms, max ${round(r.chain.handoff.max, 2)} ms; 10 ms chain: ${round((r.chain10ms.medianMs - CHAIN_LENGTH * 10) / CHAIN_LENGTH, 2)} ms per node beyond its 10 ms`,
    },
    {
      name: "ax trigger -> start p50",
      value: `${round(r.latency.p50, 2)} ms`,
      vsBaseline: slower(r.latency.p50, r.baselineLatency.p50),
      detail: `BullMQ add -> start p50 ${round(r.baselineLatency.p50, 2)} ms; ${r.latency.runs} sequential runs`,
    },
    {
      name: "ax trigger -> start p99",
      value: `${round(r.latency.p99, 2)} ms`,
      vsBaseline: slower(r.latency.p99, r.baselineLatency.p99),
      detail: `BullMQ p99 ${round(r.baselineLatency.p99, 2)} ms; ax max ${round(r.latency.max, 2)} ms`,
    },
    ...(r.scaling ? scalingRows(r.scaling, base) : []),
    ...(r.sparse ? sparseRows(r.sparse) : []),
    ...(r.idle ? idleRows(r.idle) : []),
    ...(r.memory ? memoryRows(r.memory) : []),
    ...(r.history ? historyRows(r.history, r.baselineLatency) : []),
  ]);
  console.log("");
  const h = r.health;
  console.log(
    `attempts recorded: ${h.attempts}; not success: ${h.notSuccess}; nodes with more than one attempt: ${h.retriedNodes}` +
      (h.notSuccess > 0 ? " (no-op tasks should all succeed first time: look at the warnings above)" : ""),
  );
  const axCpu = totalCpu(r.single.cpuMsPerTask, r.single.serverCpu);
  const bullCpu = totalCpu(r.baseline.endToEnd.cpuMsPerTask, r.baseline.endToEnd.serverCpu);
  const cores = availableParallelism();
  const ceiling = (cores * 1000) / axCpu;
  console.log(
    `CPU per task end to end, every process: ax ${axCpu.toFixed(2)} ms, BullMQ ${bullCpu.toFixed(2)} ms. At ${axCpu.toFixed(2)} ms ax cannot ` +
      `pass ${Math.round(ceiling)} tasks/s on ${cores} cores, ${faster(ceiling)} BullMQ's rate here`,
  );
  console.log(
    JSON.stringify({
      bullmq_tasks_per_s: Math.round(base),
      bullmq_drain_tasks_per_s: Math.round(baseDrain),
      ax_tasks_per_s: Math.round(r.single.tasksPerS),
      ratio: round(r.single.tasksPerS / base, 3),
      drain_ratio: round(r.drain.tasksPerS / baseDrain, 3),
      ...Object.fromEntries(r.slots.map(({ concurrency, drain }) => [`drain_c${concurrency}_tasks_per_s`, Math.round(drain.tasksPerS)])),
      limited_ratio: round(r.limited.tasksPerS / base, 3),
      keyed_ratio: round(r.keyed.tasksPerS / base, 3),
      diamond_tasks_per_s: Math.round(r.diamond.tasksPerS),
      chain40_ms: round(r.chain.medianMs),
      chain40_10ms_ms: round(r.chain10ms.medianMs),
      hop_p50_ms: round(r.chain.handoff.p50, 2),
      hop_p99_ms: round(r.chain.handoff.p99, 2),
      trigger_start_p50_ms: round(r.latency.p50, 2),
      trigger_start_p99_ms: round(r.latency.p99, 2),
      cpu_ms_per_task: round(r.single.cpuMsPerTask, 3),
      bullmq_cpu_ms_per_task: round(r.baseline.endToEnd.cpuMsPerTask, 3),
      total_cpu_ms_per_task: round(totalCpu(r.single.cpuMsPerTask, r.single.serverCpu), 3),
      bullmq_total_cpu_ms_per_task: round(totalCpu(r.baseline.endToEnd.cpuMsPerTask, r.baseline.endToEnd.serverCpu), 3),
      wal_bytes_per_task: Math.round(r.single.walBytesPerTask),
      ...(r.scaling && scalingJson(r.scaling)),
      ...(r.sparse && sparseJson(r.sparse)),
      ...(r.idle && idleJson(r.idle)),
      ...(r.memory && memoryJson(r.memory)),
      ...(r.history && historyJson(r.history)),
    }),
  );
}

async function main(): Promise<void> {
  installCounters();
  const sizes = benchSizes();
  const skips = benchSkips();
  if (!skips.has("scaling") || !skips.has("sparse") || !skips.has("idle") || !skips.has("memory")) assertBuilt();
  const results: Results = { ...(await measure(sizes)), ...(await measureAtScale(sizes, skips)) };
  printStatementTimes();
  report(results);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
