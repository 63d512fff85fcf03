/**
 * How long a page of `GET /api/runs` (listRunPage) takes with a large history: first page, a deep
 * page by cursor, and filtered pages. `AX_BENCH_RUNS` rows (default 1,000,000) are written straight
 * into `runs` of a private schema (dropped at the end). `npx tsx test/bench/run-list.ts`
 */
import { performance } from "node:perf_hooks";
import { listRunPage, migrate, openStore, type RunFilter } from "@ax/store";
import { isolate } from "../helpers/isolated.js";

const ROWS = Number(process.env.AX_BENCH_RUNS ?? 1_000_000);
const env = isolate("runlist");
const store = openStore({ url: env.storage });
try {
  await migrate(store);
  await env.sql(
    "insert into flow_definitions (name, version, hash, dag) values ('big', 1, 'h', '{\"flow\":\"big\",\"nodes\":[]}'), ('rare', 1, 'r', '{\"flow\":\"rare\",\"nodes\":[]}')",
  );
  const started = performance.now();
  await env.sql(
    `insert into runs (id, flow, flow_version_id, status, trigger, business_key, nodes_remaining, created_at)
     select gen_random_uuid(), case when i % 1000 = 0 then 'rare' else 'big' end,
            (select id from flow_definitions where name = case when i % 1000 = 0 then 'rare' else 'big' end),
            case when i % 50 = 0 then 'failed' else 'success' end,
            case when i % 10 = 0 then 'schedule' else 'event' end, 'order-' || i, 0,
            now() - make_interval(secs => i * 0.01)
     from generate_series(1, $1::int) i`,
    [ROWS],
  );
  await env.sql("analyze runs");
  console.log(`${ROWS.toLocaleString()} runs written in ${((performance.now() - started) / 1000).toFixed(1)} s`);

  const time = async (label: string, filter: RunFilter) => {
    const samples: number[] = [];
    let page = await listRunPage(store.db, filter);
    for (let i = 0; i < 20; i++) {
      const t0 = performance.now();
      page = await listRunPage(store.db, filter);
      samples.push(performance.now() - t0);
    }
    samples.sort((a, b) => a - b);
    console.log(`${label.padEnd(44)} median ${samples[10]!.toFixed(2)} ms  max ${samples[19]!.toFixed(2)} ms  (${page.runs.length} runs)`);
    return page;
  };

  let page = await time("first page, no filter", { limit: 50 });
  for (let i = 0; i < 200 && page.nextCursor; i++) page = await listRunPage(store.db, { limit: 50, cursor: page.nextCursor });
  await time("page 201 by cursor (10,000 runs deep)", { limit: 50, cursor: page.nextCursor ?? undefined });
  await time("flow=big", { flow: "big", limit: 50 });
  await time("flow=rare (1 run in 1,000)", { flow: "rare", limit: 50 });
  await time("status=failed", { status: "failed", limit: 50 });
  // Not in runs_status (partial: success is most runs), so read by creation time.
  await time("status=success", { status: "success", limit: 50 });
  // The rows span 10 ms each: 1M runs cover the last ~2.8 hours.
  await time("trigger=schedule, from 2 h ago to 1 h ago", {
    trigger: "schedule",
    from: new Date(Date.now() - 2 * 3600_000),
    to: new Date(Date.now() - 3600_000),
    limit: 50,
  });
  await time("businessKey=order-777", { businessKey: "order-777", limit: 50 });
} finally {
  await store.close();
  await env.cleanup();
}
