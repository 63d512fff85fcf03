import { sql } from "drizzle-orm";
import type { Db } from "../connect.js";
import type { TaskStatus } from "../types.js";
import { lockKey, rows } from "./raw.js";
import type { ReadyNode } from "./ready-node.js";

/**
 * Where the previous page ended, in the order candidates are read (oldest `queued_at` first).
 * `queuedAt` is PostgreSQL's own text for the timestamp, so no microseconds are lost in between.
 */
export interface ReconcileCursor {
  queuedAt: string;
  runId: string;
  nodeKey: string;
}

export interface ReconcileWindow {
  /** A node queued (or due for retry) longer than this should be in Redis by now. */
  staleMs: number;
  /** A running attempt whose worker has not heartbeated within this is presumed crashed. */
  leaseMs: number;
  /** Page size. */
  limit: number;
  /** Continue after this candidate; unset starts from the oldest. */
  after?: ReconcileCursor | undefined;
}

/** A node that belongs in the hot queue, with the state it was seen in. */
export interface RequeueCandidate extends ReadyNode {
  status: Extract<TaskStatus, "queued" | "retrying" | "running">;
}

export interface RequeuePage {
  nodes: RequeueCandidate[];
  /** The cursor for the next page; unset when this page was the last. */
  next: ReconcileCursor | undefined;
}

/**
 * One page of the nodes PostgreSQL says belong in the hot queue: queued or due for retry for a
 * while, or running under a lost worker or given up by its worker. Oldest first, by keyset, so a pass reaches every
 * candidate however long the healthy backlog in front of it. Re-adding their deterministic job
 * ids is harmless when Redis still has them. Returns undefined when another coordinator is
 * reading a page at this moment (its pass covers the same nodes).
 */
export async function nodesToRequeue(db: Db, window: ReconcileWindow): Promise<RequeuePage | undefined> {
  return db.transaction(async (tx) => {
    const [lock] = await rows<{ locked: boolean }>(tx, sql`select pg_try_advisory_xact_lock(${lockKey("ax.reconcile")}) as locked`);
    if (!lock?.locked) return undefined;
    const stale = sql`now() - make_interval(secs => ${window.staleMs / 1000})`;
    const lease = sql`now() - make_interval(secs => ${window.leaseMs / 1000})`;
    const since = sql`coalesce(n.queued_at, '-infinity'::timestamptz)`;
    const after = window.after
      ? sql`and (${since}, n.run_id, n.node_key) > (${window.after.queuedAt}::timestamptz, ${window.after.runId}::uuid, ${window.after.nodeKey})`
      : sql``;
    const found = await rows<{
      run_id: string;
      node_key: string;
      task: string;
      queue: string;
      status: RequeueCandidate["status"];
      attempt: number;
      flow_version_id: number;
      since: string;
      priority: number | null;
    }>(
      tx,
      sql`
      select n.run_id, n.node_key, n.task, n.queue, n.status, n.attempt, r.flow_version_id, r.priority, ${since}::text as since
      from node_runs n join runs r on r.id = n.run_id
      left join attempts a on n.status = 'running' and a.run_id = n.run_id and a.node_key = n.node_key and a.n = n.attempt
      left join workers w on w.id = a.worker
      where ((n.status = 'queued' and n.queued_at < ${stale})
         or (n.status = 'retrying' and n.next_retry_at < ${stale})
         or (n.status = 'running' and (w.id is null or w.heartbeat_at < ${lease} or a.abandoned_at is not null)))
        ${after}
      order by ${since}, n.run_id, n.node_key
      limit ${window.limit}`,
    );
    const last = found.at(-1);
    return {
      nodes: found.map((r) => ({
        runId: r.run_id,
        nodeKey: r.node_key,
        task: r.task,
        queue: r.queue,
        status: r.status,
        attempt: r.attempt,
        flowVersionId: r.flow_version_id,
        ...(r.priority ? { priority: r.priority } : {}),
      })),
      next: last && found.length === window.limit ? { queuedAt: last.since, runId: last.run_id, nodeKey: last.node_key } : undefined,
    };
  });
}
