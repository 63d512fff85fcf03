/** Nearest-rank percentile (p in 0..100) of unsorted samples. */
export function percentile(samples: number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

export function median(samples: number[]): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** A throughput measured in several rounds: the median round, and every round's rate in the order run. */
export type Rounds<T> = T & { roundRates: number[] };

/**
 * Runs `measure` `rounds` times, one after the other, and answers the round with the median
 * rate. The first rounds of a process run on code the JIT has not optimised yet and on a heap
 * still growing; one round would report that warm-up as throughput.
 */
export async function medianRound<T>(rounds: number, measure: () => Promise<T>, rate: (t: T) => number): Promise<Rounds<T>> {
  const results: T[] = [];
  for (let i = 0; i < rounds; i++) results.push(await measure());
  const sorted = [...results].sort((a, b) => rate(a) - rate(b));
  return { ...sorted[Math.floor((sorted.length - 1) / 2)]!, roundRates: results.map(rate) };
}

/** "rounds 2871, 3102, 3240 /s" for a detail column. */
export function roundsText(rates: number[]): string {
  return rates.length > 1 ? `; rounds ${rates.map((r) => Math.round(r)).join(", ")} /s` : "";
}

export function round(value: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** Sizes of one bench run; AX_BENCH_SCALE shrinks the throughput ones (quick checks on a busy machine). */
export interface BenchSizes {
  bullmqJobs: number;
  axRuns: number;
  diamondRuns: number;
  chainRepeats: number;
  /** Times each throughput scenario runs, BullMQ's and ax's alike; the median round is reported. */
  rounds: number;
  latencyRuns: number;
  /** Payloads per `triggerFlows` call while loading the throughput scenarios (calls one after the other). */
  triggerBatch: number;
  /** Pause between sequential triggers of the latency probe, so the system is not saturated. */
  latencyGapMs: number;
  concurrency: number;
}

function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name}=${raw}: give a positive number`);
  return value;
}

export function benchSizes(): BenchSizes {
  const scale = envNumber("AX_BENCH_SCALE", 1);
  const scaled = (name: string, base: number) => Math.max(10, Math.round(envNumber(name, base * scale)));
  return {
    bullmqJobs: scaled("AX_BENCH_BULLMQ_JOBS", 20_000),
    axRuns: scaled("AX_BENCH_AX_RUNS", 5_000),
    diamondRuns: scaled("AX_BENCH_DIAMOND_RUNS", 2_000),
    chainRepeats: Math.round(envNumber("AX_BENCH_CHAIN_REPEATS", 5)),
    rounds: Math.round(envNumber("AX_BENCH_ROUNDS", 3)),
    latencyRuns: scaled("AX_BENCH_LATENCY_RUNS", 300),
    triggerBatch: Math.round(envNumber("AX_BENCH_TRIGGER_BATCH", 500)),
    latencyGapMs: envNumber("AX_BENCH_LATENCY_GAP_MS", 5),
    concurrency: Math.round(envNumber("AX_BENCH_CONCURRENCY", 100)),
  };
}

/** A count from `name`, or `base` x AX_BENCH_SCALE (at least 10). */
export function scaledSize(name: string, base: number): number {
  return Math.max(10, Math.round(envNumber(name, base * envNumber("AX_BENCH_SCALE", 1))));
}

/** A count from `name` that AX_BENCH_SCALE does not shrink. */
export function fixedSize(name: string, base: number): number {
  return Math.round(envNumber(name, base));
}

export const SKIPPABLE = ["scaling", "sparse", "idle", "memory", "history"] as const;
export type Skippable = (typeof SKIPPABLE)[number];

/** The scenarios named in AX_BENCH_SKIP (a comma list); a misspelt name fails rather than silently running it. */
export function benchSkips(): Set<Skippable> {
  const names = (process.env.AX_BENCH_SKIP ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = names.filter((n) => !(SKIPPABLE as readonly string[]).includes(n));
  if (unknown.length)
    throw new Error(`AX_BENCH_SKIP=${process.env.AX_BENCH_SKIP}: ${unknown.join(", ")} unknown; give some of ${SKIPPABLE.join(",")}`);
  return new Set(names as Skippable[]);
}

export interface Row {
  name: string;
  value: string;
  vsBaseline: string;
  detail: string;
}

export function printTable(rows: Row[]): void {
  const header: Row = { name: "scenario", value: "result", vsBaseline: "vs BullMQ", detail: "detail" };
  const all = [header, ...rows];
  const width = (key: keyof Row) => Math.max(...all.map((r) => r[key].length));
  const w = { name: width("name"), value: width("value"), vsBaseline: width("vsBaseline") };
  const line = (r: Row) => `${r.name.padEnd(w.name)}  ${r.value.padStart(w.value)}  ${r.vsBaseline.padStart(w.vsBaseline)}  ${r.detail}`;
  console.log(line(header));
  console.log("-".repeat(line(header).length + 20));
  for (const r of rows) console.log(line(r));
}
