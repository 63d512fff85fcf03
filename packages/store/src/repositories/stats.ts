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

/** Distinct queues that nodes have been routed to. */
export async function knownQueues(db: Db): Promise<string[]> {
  const found = await rows<{ queue: string }>(
    db,
    sql`select distinct queue from node_runs where status in ('queued', 'retrying', 'running')`,
  );
  return found.map((r) => r.queue);
}
