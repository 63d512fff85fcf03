// Logging must not dominate the figures; set before the runtime builds its logger.
process.env.AX_LOG_LEVEL ??= "warn";

import { ax, Runtime } from "ax-scheduler";
import { seedHistory } from "../helpers/history.js";
import { isolate } from "../helpers/isolated.js";
import { percentile, round } from "./stats.js";

/**
 * `pnpm bench:history`: how the API's recent-run queries hold up with a large history
 * (AX_BENCH_HISTORY_RUNS, default 1,000,000 runs with a node, an attempt and some task log lines
 * each), and how fast a prune of 20% of it goes. Not part of `pnpm test`.
 */
const DAY = 86_400_000;
const total = Number(process.env.AX_BENCH_HISTORY_RUNS ?? 1_000_000);
const REPEATS = 30;

const step = ax.task({ name: "history_step" }, (n: number) => n);
const busy = ax.flow({ name: "history_busy" }, (n) => step(n));
const rare = ax.flow({ name: "history_rare" }, (n) => step(n));

async function main(): Promise<void> {
  const env = isolate("hist");
  const runtime = new Runtime({
    storage: env.storage,
    redis: env.redis,
    prefix: env.prefix,
    flows: [busy, rare],
    roles: ["coordinator", "api"],
    port: 0,
    insecureNoAuth: true,
  });
  try {
    await runtime.start();
    const client = runtime.client();
    const t0 = performance.now();
    // 80% recent-ish (the last 80 days), 20% older than 90 days; one flow 10x the other; 5% failed.
    const now = Date.now();
    const busyRuns = Math.round(total * 0.85);
    await seedHistory(env, {
      flow: "history_busy",
      runs: Math.round(busyRuns * 0.8),
      tag: "b:",
      newest: new Date(now - 60_000),
      spreadDays: 80,
    });
    await seedHistory(env, {
      flow: "history_busy",
      runs: Math.round(busyRuns * 0.2),
      tag: "bo:",
      newest: new Date(now - 91 * DAY),
      spreadDays: 90,
    });
    await seedHistory(env, {
      flow: "history_rare",
      runs: Math.round(total * 0.1),
      tag: "r:",
      newest: new Date(now - 120_000),
      spreadDays: 170,
    });
    await seedHistory(env, {
      flow: "history_rare",
      runs: Math.round(total * 0.05),
      tag: "f:",
      newest: new Date(now - 30_000),
      spreadDays: 170,
      status: "failed",
    });
    await env.sql("analyze");
    const [{ n }] = (await env.sql<{ n: number }>("select count(*)::int as n from runs")) as [{ n: number }];
    console.log(`seeded ${n} runs in ${round((performance.now() - t0) / 1000)} s`);

    const [sample] = await env.sql<{ id: string }>("select id from runs where idempotency_key = 'b:1'");
    const queries: [string, string][] = [
      ["latest 50", "/api/runs?limit=50"],
      ["flow filter (10% flow), latest 50", "/api/runs?flow=history_rare&limit=50"],
      ["status=failed, latest 50", "/api/runs?status=failed&limit=50"],
      ["flow + status, latest 50", "/api/runs?flow=history_busy&status=success&limit=50"],
      ["business key", "/api/runs?businessKey=order-4242"],
      ["one run", `/api/runs/${sample!.id}`],
      ["one run's task logs", `/api/runs/${sample!.id}/logs`],
    ];
    const figures: Record<string, { p50: number; p99: number }> = {};
    for (const [name, path] of queries) {
      const times: number[] = [];
      for (let i = 0; i < REPEATS + 3; i++) {
        const start = performance.now();
        const response = await fetch(`${runtime.url}${path}`);
        if (!response.ok) throw new Error(`${path}: HTTP ${response.status} ${await response.text()}`);
        await response.json();
        if (i >= 3) times.push(performance.now() - start);
      }
      figures[name] = { p50: round(percentile(times, 50)), p99: round(percentile(times, 99)) };
      console.log(`${name.padEnd(36)} p50 ${String(figures[name].p50).padStart(7)} ms   p99 ${String(figures[name].p99).padStart(7)} ms`);
    }
    const p0 = performance.now();
    const pruned = await client.prune({ olderThan: "90d" });
    const pruneS = (performance.now() - p0) / 1000;
    console.log(`prune of ${pruned.runs} runs older than 90d: ${round(pruneS)} s (${Math.round(pruned.runs / pruneS)} runs/s)`);
    console.log(
      JSON.stringify({
        history_runs: n,
        ...Object.fromEntries(Object.entries(figures).map(([k, v]) => [k, v.p99])),
        prune_runs_per_s: Math.round(pruned.runs / pruneS),
      }),
    );
  } finally {
    await runtime.stop();
    await env.cleanup();
  }
}

await main();
