import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { REPO_ROOT, TS_FIXTURE } from "../helpers/processes.js";

/**
 * `pnpm bench` at a few dozen runs per scenario: not a measurement (the figures of such a run say
 * nothing), but proof that the scenarios still run to the end against this build and that the
 * final JSON line carries the keys the performance goals are read from. Speed itself is only ever
 * measured by the full-size `pnpm bench`. The two scenarios that start several worker processes
 * (scaling over 1, 2 and 4 processes; sparse load over 4) are left out: they spent some 25 s of
 * CPU of a CI run whose two cores are busy throughout, and `pnpm bench` runs them.
 */
const TINY = {
  AX_BENCH_BUILT: "1",
  AX_BENCH_SCALE: "0.02",
  AX_BENCH_ROUNDS: "1",
  AX_BENCH_CHAIN_REPEATS: "1",
  AX_BENCH_QUEUED_RUNS: "300",
  AX_BENCH_SPARSE_RUNS: "50",
  AX_BENCH_SPARSE_WARMUP: "20",
  AX_BENCH_IDLE_MS: "500",
  AX_BENCH_IDLE_SECONDS: "1",
  AX_BENCH_HISTORY_PROBES: "20",
  AX_BENCH_HISTORY_RUNS: "2000",
  AX_BENCH_SKIP: "scaling,sparse",
};

const GOAL_KEYS = ["ratio", "drain_ratio", "chain40_ms", "chain40_10ms_ms", "hop_p50_ms", "hop_p99_ms"];
const SCENARIO_KEYS = [
  "diamond_tasks_per_s",
  "drain_c10_tasks_per_s",
  "drain_c300_tasks_per_s",
  "total_cpu_ms_per_task",
  "wal_bytes_per_task",
  "idle_redis_commands_per_s",
  "worker_rss_peak_mb",
  "worker_cpu_ms_per_task",
  "trigger_p50_ms_empty",
  "start_p50_ms_1m",
];

describe("pnpm bench, tiny", { timeout: 240_000 }, () => {
  it("runs every scenario to the end and prints the goals' keys in its final JSON line", async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [...TS_FIXTURE, "test/bench/run.ts"], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...TINY },
      timeout: 230_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    const last = stdout.trim().split("\n").at(-1)!;
    const figures = JSON.parse(last) as Record<string, unknown>;
    for (const key of [...GOAL_KEYS, ...SCENARIO_KEYS]) {
      expect(figures[key], `${key} in ${last}`).toEqual(expect.any(Number));
      expect(figures[key] as number, key).toBeGreaterThan(0);
    }
    expect(figures.history_runs).toBe(2_000);
    expect(stdout).toMatch(/ax single-node flow, end to end\s+\d+ \/s\s+[\d.]+x/);
    expect(stdout).toMatch(/attempts recorded: \d+; not success: 0;/);
    expect(stdout).toMatch(/worker RSS peak, 300 queued runs/);
  });
});
