import { setTimeout as sleep } from "node:timers/promises";
import { ax, Runtime, type Client } from "ax-scheduler";
import { seedHistory } from "../helpers/history.js";
import { isolate, type Isolated } from "../helpers/isolated.js";
import { fixedSize, percentile, round, scaledSize, type Row } from "./stats.js";
import { waitForRuns } from "./runs.js";

const noop = ax.task({ name: "bench_history_noop" }, (..._args: unknown[]) => null);
const FLOW = "bench_history_probe";
const probeFlow = ax.flow({ name: FLOW }, (input) => {
  noop(input);
});

/** Runs per seedHistory call: progress in the log, and no single statement writing millions of rows. */
const SEED_CHUNK = 250_000;
const HISTORY_DAYS = 30;
const WARM_UP_RUNS = 50;

export interface ProbeResult {
  /** How long the `triggerFlow` call took, as the caller sees it. */
  trigger: { p50: number; p99: number };
  /** `attempts.started_at` (first attempt) minus `runs.created_at`. */
  start: { p50: number; p99: number };
}

export interface HistoryResult {
  probes: number;
  historyRuns: number;
  empty: ProbeResult;
  large: ProbeResult;
  seedS: number;
  analyzeS: number;
}

export function historySizes(): { historyRuns: number; probes: number } {
  return { historyRuns: scaledSize("AX_BENCH_HISTORY_RUNS", 1_000_000), probes: fixedSize("AX_BENCH_HISTORY_PROBES", 200) };
}

/**
 * `runs` runs triggered one at a time, `gapMs` apart, each with its own idempotency key and a
 * business key the seeded history also uses, so both lookups go through their indexes.
 */
async function probe(client: Client, env: Isolated, phase: string, runs: number, gapMs: number): Promise<ProbeResult> {
  const ids: string[] = [];
  const callMs: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    ids.push(await client.triggerFlow(FLOW, { i }, { idempotencyKey: `${phase}-${i}`, businessKey: `order-${i}` }));
    callMs.push(performance.now() - t0);
    await sleep(gapMs);
  }
  await waitForRuns(env, ids, 60_000);
  const rows = await env.sql<{ ms: number }>(
    `select extract(epoch from (a.started_at - r.created_at)) * 1000 as ms
     from runs r join attempts a on a.run_id = r.id and a.n = 1
     where r.id = any($1::uuid[])`,
    [ids],
  );
  const startMs = rows.map((r) => Number(r.ms));
  return {
    trigger: { p50: percentile(callMs, 50), p99: percentile(callMs, 99) },
    start: { p50: percentile(startMs, 50), p99: percentile(startMs, 99) },
  };
}

/** `total` finished runs of the probed flow, spread over the last HISTORY_DAYS days. */
async function seed(env: Isolated, total: number, log: (message: string) => void): Promise<void> {
  const now = Date.now();
  for (let done = 0, chunk = 0; done < total; chunk++) {
    const runs = Math.min(SEED_CHUNK, total - done);
    await seedHistory(env, {
      flow: FLOW,
      runs,
      tag: `h${chunk}:`,
      newest: new Date(now - 60_000 - (HISTORY_DAYS * 86_400_000 * done) / total),
      spreadDays: (HISTORY_DAYS * runs) / total,
    });
    done += runs;
    log(`large history: seeded ${done}/${total} runs`);
  }
}

/**
 * Trigger call time and trigger -> start of one flow on an empty schema, then again once that
 * same flow has `historyRuns` finished runs (with their nodes, attempts, idempotency keys and
 * some log lines) and fresh planner statistics. One Runtime, worker + coordinator.
 */
export async function largeHistory(
  sizes: { historyRuns: number; probes: number; concurrency: number; gapMs: number },
  log: (message: string) => void,
): Promise<HistoryResult> {
  const env = isolate("hist1m");
  const runtime = new Runtime({
    storage: env.storage,
    redis: env.redis,
    prefix: env.prefix,
    roles: ["worker", "coordinator"],
    maxConcurrency: sizes.concurrency,
    logLevel: process.env.AX_LOG_LEVEL ?? "warn",
    flows: [probeFlow],
  });
  try {
    await runtime.start();
    const client = runtime.client();
    await probe(client, env, "warm", WARM_UP_RUNS, sizes.gapMs);
    log(`large history: ${sizes.probes} sequential runs on an empty schema`);
    const empty = await probe(client, env, "empty", sizes.probes, sizes.gapMs);
    const t0 = performance.now();
    await seed(env, sizes.historyRuns, log);
    const t1 = performance.now();
    await env.sql("analyze");
    const t2 = performance.now();
    log(`large history: ${sizes.probes} sequential runs after ${sizes.historyRuns} runs of history`);
    const large = await probe(client, env, "large", sizes.probes, sizes.gapMs);
    return {
      probes: sizes.probes,
      historyRuns: sizes.historyRuns,
      empty,
      large,
      seedS: (t1 - t0) / 1000,
      analyzeS: (t2 - t1) / 1000,
    };
  } finally {
    await runtime.stop();
    await env.cleanup();
  }
}

export function historyRows(r: HistoryResult, bullmqStart: { p50: number; p99: number }): Row[] {
  const ms = (v: number) => `${round(v, 2)} ms`;
  const before = `on the empty schema, ${r.probes} sequential runs`;
  const history = `${r.historyRuns} runs of history seeded in ${round(r.seedS)} s, analyze ${round(r.analyzeS)} s`;
  return [
    {
      name: "ax trigger call p50, large history",
      value: ms(r.large.trigger.p50),
      vsBaseline: "-",
      detail: `${ms(r.empty.trigger.p50)} ${before}; ${history}`,
    },
    {
      name: "ax trigger call p99, large history",
      value: ms(r.large.trigger.p99),
      vsBaseline: "-",
      detail: `${ms(r.empty.trigger.p99)} ${before}`,
    },
    {
      name: "ax trigger -> start p50, large history",
      value: ms(r.large.start.p50),
      vsBaseline: `${(r.large.start.p50 / bullmqStart.p50).toFixed(1)}x time`,
      detail: `${ms(r.empty.start.p50)} ${before}`,
    },
    {
      name: "ax trigger -> start p99, large history",
      value: ms(r.large.start.p99),
      vsBaseline: `${(r.large.start.p99 / bullmqStart.p99).toFixed(1)}x time`,
      detail: `${ms(r.empty.start.p99)} ${before}`,
    },
  ];
}

export function historyJson(r: HistoryResult): Record<string, number> {
  return {
    history_runs: r.historyRuns,
    trigger_p50_ms_empty: round(r.empty.trigger.p50, 2),
    trigger_p50_ms_1m: round(r.large.trigger.p50, 2),
    trigger_p99_ms_empty: round(r.empty.trigger.p99, 2),
    trigger_p99_ms_1m: round(r.large.trigger.p99, 2),
    start_p50_ms_empty: round(r.empty.start.p50, 2),
    start_p50_ms_1m: round(r.large.start.p50, 2),
    start_p99_ms_empty: round(r.empty.start.p99, 2),
    start_p99_ms_1m: round(r.large.start.p99, 2),
  };
}
