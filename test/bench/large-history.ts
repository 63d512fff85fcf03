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
  /** VACUUM (ANALYZE) of the seeded schema's tables and a CHECKPOINT. */
  settleS: number;
  /** False when the database user may not run CHECKPOINT (it needs superuser or pg_checkpoint). */
  checkpointed: boolean;
}

export function historySizes(): { historyRuns: number; probes: number } {
  return { historyRuns: scaledSize("AX_BENCH_HISTORY_RUNS", 1_000_000), probes: fixedSize("AX_BENCH_HISTORY_PROBES", 200) };
}

/** One schema under test and its Runtime's client. */
interface Target {
  env: Isolated;
  client: Client;
}

/** A target and what its probes have measured so far. */
interface Probed extends Target {
  ids: string[];
  callMs: number[];
}

/** One run triggered with its own idempotency key and a business key the seeded history also uses, so both lookups go through their indexes. */
async function probeOnce(target: Probed, phase: string, i: number): Promise<void> {
  const t0 = performance.now();
  target.ids.push(await target.client.triggerFlow(FLOW, { i }, { idempotencyKey: `${phase}-${i}`, businessKey: `order-${i}` }));
  target.callMs.push(performance.now() - t0);
}

async function summarise(target: Probed): Promise<ProbeResult> {
  await waitForRuns(target.env, target.ids, 60_000);
  const rows = await target.env.sql<{ ms: number }>(
    `select extract(epoch from (a.started_at - r.created_at)) * 1000 as ms
     from runs r join attempts a on a.run_id = r.id and a.n = 1
     where r.id = any($1::uuid[])`,
    [target.ids],
  );
  const startMs = rows.map((r) => Number(r.ms));
  return {
    trigger: { p50: percentile(target.callMs, 50), p99: percentile(target.callMs, 99) },
    start: { p50: percentile(startMs, 50), p99: percentile(startMs, 99) },
  };
}

/**
 * `runs` runs on each schema, one at a time and `gapMs` apart, alternating between them (in
 * turn first and second), so that both see the same minutes of the machine: a shared machine's
 * drift between a "before" and an "after" is larger than what a history could change.
 */
async function probeAlternately(a: Target, b: Target, phase: string, runs: number, gapMs: number): Promise<[ProbeResult, ProbeResult]> {
  const targets = [a, b].map((t): Probed => ({ ...t, ids: [], callMs: [] }));
  for (let i = 0; i < runs; i++) {
    for (const target of i % 2 === 0 ? targets : [...targets].reverse()) {
      await probeOnce(target, phase, i);
      await sleep(gapMs);
    }
  }
  return [await summarise(targets[0]!), await summarise(targets[1]!)];
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
 * What a history that grew over weeks has had done to it, and one written a moment ago has not:
 * autovacuum's pass (hint bits, visibility map, statistics) and the checkpoints that wrote its
 * pages. Without this the probes would time the seeding's own write-back.
 */
async function settle(env: Isolated, log: (message: string) => void): Promise<boolean> {
  const tables = await env.sql<{ name: string }>("select tablename as name from pg_tables where schemaname = $1", [env.schema]);
  for (const { name } of tables) await env.sql(`vacuum (analyze) "${env.schema}"."${name}"`);
  try {
    await env.sql("checkpoint");
    return true;
  } catch (err) {
    log(`large history: no CHECKPOINT (${(err as Error).message}); the probes may time the seeding's write-back`);
    return false;
  }
}

function probeRuntime(env: Isolated, concurrency: number): Runtime {
  return new Runtime({
    storage: env.storage,
    redis: env.redis,
    prefix: env.prefix,
    roles: ["worker", "coordinator"],
    maxConcurrency: concurrency,
    logLevel: process.env.AX_LOG_LEVEL ?? "warn",
    flows: [probeFlow],
  });
}

/**
 * Trigger call time and trigger -> start of one flow on two schemas at once, one Runtime (worker
 * + coordinator) each: one empty, one holding `historyRuns` finished runs of the same flow (with
 * their nodes, attempts, idempotency keys and some log lines), vacuumed and checkpointed.
 */
export async function largeHistory(
  sizes: { historyRuns: number; probes: number; concurrency: number; gapMs: number },
  log: (message: string) => void,
): Promise<HistoryResult> {
  const envs = [isolate("hist0"), isolate("hist1m")] as const;
  const runtimes = envs.map((env) => probeRuntime(env, sizes.concurrency));
  try {
    await Promise.all(runtimes.map((r) => r.start()));
    const [empty, large] = envs.map((env, i): Target => ({ env, client: runtimes[i]!.client() }));
    const t0 = performance.now();
    await seed(large!.env, sizes.historyRuns, log);
    const t1 = performance.now();
    const checkpointed = await settle(large!.env, log);
    const t2 = performance.now();
    await probeAlternately(empty!, large!, "warm", WARM_UP_RUNS, sizes.gapMs);
    log(`large history: ${sizes.probes} sequential runs on each schema, alternating between the empty one and the one with history`);
    const [emptyResult, largeResult] = await probeAlternately(empty!, large!, "probe", sizes.probes, sizes.gapMs);
    return {
      probes: sizes.probes,
      historyRuns: sizes.historyRuns,
      empty: emptyResult,
      large: largeResult,
      seedS: (t1 - t0) / 1000,
      settleS: (t2 - t1) / 1000,
      checkpointed,
    };
  } finally {
    await Promise.all(runtimes.map((r) => r.stop()));
    await Promise.all(envs.map((env) => env.cleanup()));
  }
}

export function historyRows(r: HistoryResult, bullmqStart: { p50: number; p99: number }): Row[] {
  const ms = (v: number) => `${round(v, 2)} ms`;
  const before = `on an empty schema, the same ${r.probes} sequential runs alternating with these`;
  const settled = r.checkpointed ? "vacuum and checkpoint" : "vacuum (no checkpoint allowed)";
  const history = `${r.historyRuns} runs of history seeded in ${round(r.seedS)} s, ${settled} ${round(r.settleS)} s`;
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
