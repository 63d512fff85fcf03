import { sql } from "drizzle-orm";
import type { Db } from "../connect.js";
import { RUN_STATUSES, type RunStatus } from "@ax/common";
import { rows } from "./raw.js";

export interface RunCount {
  flow: string;
  status: string;
  count: number;
}

/**
 * Runs by flow and status (of `statuses`), for the metrics endpoint: every defined flow has every
 * status asked for, 0 when it has no such run, so a series does not vanish when its last run moves
 * on (a rule on `ax_runs{status="running"}` would read "no data", not 0). Unfinished statuses are
 * read through the status index; finished ones scan the whole history.
 */
export async function countRunsByStatus(db: Db, statuses: readonly RunStatus[] = RUN_STATUSES): Promise<RunCount[]> {
  const [found, flows] = await Promise.all([
    rows<{ flow: string; status: string; count: number }>(
      db,
      sql`select flow, status, count(*)::int as count from runs
          where status in (${sql.join(
            statuses.map((s) => sql`${s}`),
            sql`, `,
          )}) group by flow, status`,
    ),
    rows<{ name: string }>(db, sql`select distinct name from flow_definitions`),
  ]);
  const counts = new Map(found.map((r) => [`${r.flow}\u0000${r.status}`, Number(r.count)]));
  const names = new Set([...flows.map((f) => f.name), ...found.map((r) => r.flow)]);
  return [...names].flatMap((flow) => statuses.map((status) => ({ flow, status, count: counts.get(`${flow}\u0000${status}`) ?? 0 })));
}

/** Runs still `running` longer than `thresholdMs`, by flow: every defined flow, 0 when it has none. */
export async function countStuckRuns(db: Db, thresholdMs: number): Promise<{ flow: string; count: number }[]> {
  const found = await rows<{ flow: string; count: number }>(
    db,
    // Every defined flow gets a row, 0 when none of its runs is stuck: an alert rule on a series
    // that only exists while something is stuck cannot tell "nothing stuck" from "not scraped".
    sql`select f.name as flow, coalesce(s.count, 0)::int as count
        from (select distinct name from flow_definitions) f
        left join (select flow, count(*) as count from runs
          where status = 'running' and started_at < now() - make_interval(secs => ${thresholdMs / 1000})
          group by flow) s on s.flow = f.name`,
  );
  return found.map((r) => ({ ...r, count: Number(r.count) }));
}

/** Distinct (worker group, task) pairs of nodes waiting or running: the task queues in use. */
export async function knownQueues(db: Db): Promise<{ queue: string; task: string }[]> {
  return rows<{ queue: string; task: string }>(
    db,
    sql`select distinct queue, task from node_runs where status in ('queued', 'retrying', 'running')`,
  );
}
