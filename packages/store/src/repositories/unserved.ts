import { sql } from "drizzle-orm";
import type { Db } from "../connect.js";
import { rows } from "./raw.js";
import type { ReadyNode } from "./ready-node.js";

export interface UnservedNode extends ReadyNode {
  /** How long it has been due to start, by PostgreSQL's clock. */
  waitedMs: number;
}

/**
 * Nodes due to start for longer than `graceMs` whose task queue (`group.task`) no live worker
 * serves: workers fetch only from the queues of tasks they define, so after a rolling deploy that
 * dropped a task nobody ever takes these.
 */
export async function unservedNodes(db: Db, window: { graceMs: number; leaseMs: number; limit: number }): Promise<UnservedNode[]> {
  const found = await rows<{
    run_id: string;
    node_key: string;
    task: string;
    queue: string;
    attempt: number;
    flow_version_id: number;
    waited_ms: number;
  }>(
    db,
    sql`
    select n.run_id, n.node_key, n.task, n.queue, n.attempt, r.flow_version_id,
      extract(epoch from now() - greatest(n.queued_at, n.next_retry_at)) * 1000 as waited_ms
    from node_runs n join runs r on r.id = n.run_id
    where n.status in ('queued', 'retrying')
      and greatest(n.queued_at, n.next_retry_at) < now() - make_interval(secs => ${window.graceMs / 1000})
      and not exists (
        select 1 from workers w
        where w.heartbeat_at >= now() - make_interval(secs => ${window.leaseMs / 1000})
          and (n.queue || '.' || n.task) = any(w.queues))
    order by n.queued_at
    limit ${window.limit}`,
  );
  return found.map((r) => ({
    runId: r.run_id,
    nodeKey: r.node_key,
    task: r.task,
    queue: r.queue,
    attempt: Number(r.attempt),
    flowVersionId: Number(r.flow_version_id),
    waitedMs: Number(r.waited_ms),
  }));
}

/** The task queues (`group.task`) live workers serve, for telling why a node waits. */
export async function servedQueues(db: Db, leaseMs: number): Promise<Map<string, number>> {
  const found = await rows<{ queue: string; workers: number }>(
    db,
    sql`
    select q as queue, count(*)::int as workers
    from workers w, unnest(w.queues) as q
    where w.heartbeat_at >= now() - make_interval(secs => ${leaseMs / 1000})
    group by q`,
  );
  return new Map(found.map((r) => [r.queue, Number(r.workers)]));
}
