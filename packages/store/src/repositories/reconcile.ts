import { sql } from "drizzle-orm";
import type { Db } from "../connect.js";
import { rows } from "./raw.js";
import type { ReadyNode } from "./ready-node.js";

/** Arbitrary constant: one reconciler pass at a time across all coordinators. */
const RECONCILE_LOCK = 7_314_002;

export interface ReconcileWindow {
  /** A node queued (or due for retry) longer than this should be in Redis by now. */
  staleMs: number;
  /** A running attempt whose worker has not heartbeated within this is presumed crashed. */
  leaseMs: number;
  limit: number;
}

/**
 * Nodes PostgreSQL says belong in the hot queue: queued or due for retry for a while, or running
 * under a lost worker or given up by its worker. Re-adding their deterministic job ids is harmless when Redis still has them.
 * Returns undefined when another coordinator holds the reconcile lock.
 */
export async function nodesToRequeue(db: Db, window: ReconcileWindow): Promise<ReadyNode[] | undefined> {
  return db.transaction(async (tx) => {
    const [lock] = await rows<{ locked: boolean }>(tx, sql`select pg_try_advisory_xact_lock(${RECONCILE_LOCK}) as locked`);
    if (!lock?.locked) return undefined;
    const stale = sql`now() - make_interval(secs => ${window.staleMs / 1000})`;
    const lease = sql`now() - make_interval(secs => ${window.leaseMs / 1000})`;
    const found = await rows<{ run_id: string; node_key: string; task: string; queue: string; attempt: number; flow_version_id: number; priority: number | null }>(
      tx,
      sql`
      select n.run_id, n.node_key, n.task, n.queue, n.attempt, r.flow_version_id, r.priority
      from node_runs n join runs r on r.id = n.run_id
      left join attempts a on n.status = 'running' and a.run_id = n.run_id and a.node_key = n.node_key and a.n = n.attempt
      left join workers w on w.id = a.worker
      where (n.status = 'queued' and n.queued_at < ${stale})
         or (n.status = 'retrying' and n.next_retry_at < ${stale})
         or (n.status = 'running' and (w.id is null or w.heartbeat_at < ${lease} or a.abandoned_at is not null))
      limit ${window.limit}`,
    );
    return found.map((r) => ({
      runId: r.run_id,
      nodeKey: r.node_key,
      task: r.task,
      queue: r.queue,
      attempt: r.attempt,
      flowVersionId: r.flow_version_id,
      ...(r.priority ? { priority: r.priority } : {}),
    }));
  });
}
