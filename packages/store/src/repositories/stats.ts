import { sql } from "drizzle-orm";
import type { Db } from "../connect.js";
import { rows } from "./raw.js";

export interface RunCount {
  flow: string;
  status: string;
  count: number;
}

/** Runs by flow and status, for the metrics endpoint (one grouped query per scrape). */
export async function countRunsByStatus(db: Db): Promise<RunCount[]> {
  const found = await rows<{ flow: string; status: string; count: number }>(
    db,
    sql`select flow, status, count(*)::int as count from runs group by flow, status`,
  );
  return found.map((r) => ({ ...r, count: Number(r.count) }));
}

/** Runs still `running` longer than `thresholdMs`, by flow. */
export async function countStuckRuns(db: Db, thresholdMs: number): Promise<{ flow: string; count: number }[]> {
  const found = await rows<{ flow: string; count: number }>(
    db,
    sql`select flow, count(*)::int as count from runs
        where status = 'running' and started_at < now() - make_interval(secs => ${thresholdMs / 1000})
        group by flow`,
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
