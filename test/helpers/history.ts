import type { Isolated } from "./isolated.js";

export interface SeedOptions {
  flow: string;
  /** Runs to insert. */
  runs: number;
  /** Distinguishes this batch's ids and keys from other batches'. */
  tag: string;
  /** The newest run's created_at; the others are spread evenly `spreadDays` before it. */
  newest: Date;
  spreadDays?: number;
  status?: "success" | "failed" | "running";
  /** Every n-th run gets two task log lines. @defaultValue 10 */
  logEvery?: number;
}

/**
 * Backdated history written straight into the tables with generate_series (200,000 runs take
 * seconds): runs with an idempotency key, one node and one attempt each, and some task log lines.
 */
export async function seedHistory(env: Isolated, o: SeedOptions): Promise<void> {
  const [version] = await env.sql<{ id: number }>("select id from flow_definitions where name = $1 order by version desc limit 1", [
    o.flow,
  ]);
  if (!version) throw new Error(`flow ${o.flow} is not registered; start a Runtime with it first`);
  const spreadSecs = ((o.spreadDays ?? 1) * 86_400) / Math.max(1, o.runs);
  const finished = o.status === "running" ? "null" : "g.created_at + interval '50 milliseconds'";
  await env.sql(
    `insert into runs (id, flow, flow_version_id, status, trigger, payload, business_key, idempotency_key, nodes_remaining, created_at, started_at, finished_at)
     select (substr(g.h, 1, 12) || '4' || substr(g.h, 14, 3) || '8' || substr(g.h, 18, 15))::uuid, $2, $3, $4, 'event', jsonb_build_object('n', g.i), 'order-' || g.i, $1 || g.i, 0,
            g.created_at, g.created_at + interval '1 millisecond', ${finished}
     from (select i, md5($1 || i) as h, $5::timestamptz - make_interval(secs => (i - 1) * $6::float8) as created_at from generate_series(1, $7::int) i) g`,
    [o.tag, o.flow, version.id, o.status ?? "success", o.newest.toISOString(), spreadSecs, o.runs],
  );
  const mine = "r.idempotency_key like $1 || '%' and r.flow = $2";
  await env.sql(
    `insert into idempotency_keys (flow, key, run_id, created_at) select r.flow, r.idempotency_key, r.id, r.created_at from runs r where ${mine}`,
    [o.tag, o.flow],
  );
  await env.sql(
    `insert into node_runs (run_id, node_key, task, queue, status, deps_remaining, attempt, result, queued_at, started_at, finished_at)
     select r.id, 'seed', 'seed', 'default', case when r.status = 'running' then 'running' else r.status end, 0, 1, '"ok"'::jsonb, r.created_at, r.started_at, r.finished_at
     from runs r where ${mine}`,
    [o.tag, o.flow],
  );
  await env.sql(
    `insert into attempts (run_id, node_key, n, worker, started_at, finished_at, outcome)
     select r.id, 'seed', 1, 'seed-worker', r.started_at, r.finished_at, case when r.status = 'running' then null else r.status end
     from runs r where ${mine}`,
    [o.tag, o.flow],
  );
  await env.sql(
    `insert into attempt_logs (run_id, node_key, attempt, seq, at, level, msg, fields)
     select r.id, 'seed', 1, s, r.started_at, 'info', 'seeded line ' || s, null
     from runs r cross join generate_series(1, 2) s
     where ${mine} and ('x' || substr(md5(r.id::text), 1, 8))::bit(32)::int % $3 = 0`,
    [o.tag, o.flow, o.logEvery ?? 10],
  );
}
