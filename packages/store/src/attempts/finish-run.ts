import { sql, type SQL } from "drizzle-orm";

/**
 * The `runs` update every transition that makes nodes terminal ends with: count the run down by
 * the nodes finishing, add the blocking failures, and finish the run at zero (`failed` if any
 * failure blocked it, else `success`). `counts` names a relation of
 * `(run_id uuid, n int, blocking int)`, at most one row per run; runs without a row are left as
 * they are. Returns `id, status, nodes_remaining, flow_version_id` of each run counted down.
 */
export function finishRunsSql(counts: SQL): SQL {
  return sql`
    update runs r set
      nodes_remaining = r.nodes_remaining - c.n,
      blocking_failures = r.blocking_failures + c.blocking,
      status = case when r.nodes_remaining - c.n = 0 and r.status in ('pending', 'running')
        then (case when r.blocking_failures + c.blocking > 0 then 'failed' else 'success' end)
        else r.status end,
      finished_at = case when r.nodes_remaining - c.n = 0 then now() else r.finished_at end
    from ${counts} c
    where r.id = c.run_id
    returning r.id, r.status, r.nodes_remaining, r.flow_version_id`;
}
