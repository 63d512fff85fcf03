import { sql } from "drizzle-orm";
import type { Db } from "../connect.js";
import { rows } from "./raw.js";
import type { ReadyNode } from "./ready-node.js";

export interface UnservedNode extends ReadyNode {
  /** How long it has been due to start, by PostgreSQL's clock. */
  waitedMs: number;
  /** Its run's flow and business key, for the events its failure raises. */
  flow: string;
  businessKey: string | null;
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
    flow: string;
    business_key: string | null;
  }>(
    db,
    sql`
    select n.run_id, n.node_key, n.task, n.queue, n.attempt, r.flow_version_id, r.flow, r.business_key,
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
    flow: r.flow,
    businessKey: r.business_key,
  }));
}

/** What the live workers serving one task queue (`group.task`) have. */
export interface ServedQueue {
  workers: number;
  /** Attempts running in those workers, of any queue: a worker's slots are shared by its queues. */
  running: number;
  /** Their slots together (`maxConcurrency` each); null when a worker older than 0.9 does not say. */
  capacity: number | null;
  /** Every one of them has all its slots taken: a queued node waits for a slot to free. */
  full: boolean;
}

/** The task queues live workers serve, with their slots, for telling why a node waits. */
export async function servedQueues(db: Db, leaseMs: number): Promise<Map<string, ServedQueue>> {
  const found = await rows<{ queue: string; workers: number; running: number; capacity: number | null; full: boolean }>(
    db,
    sql`
    with live as (
      select id, queues, concurrency from workers
      where heartbeat_at >= now() - make_interval(secs => ${leaseMs / 1000})
    ), running as (
      select a.worker, count(*)::int as running
      from node_runs n
      join attempts a on a.run_id = n.run_id and a.node_key = n.node_key and a.n = n.attempt
      where n.status = 'running' and a.worker in (select id from live)
      group by a.worker
    )
    select q as queue, count(*)::int as workers, sum(coalesce(r.running, 0))::int as running,
      case when bool_and(w.concurrency is not null) then sum(w.concurrency)::int end as capacity,
      bool_and(w.concurrency is not null and coalesce(r.running, 0) >= w.concurrency) as full
    from live w left join running r on r.worker = w.id, unnest(w.queues) as q
    group by q`,
  );
  return new Map(
    found.map((r) => [
      r.queue,
      { workers: Number(r.workers), running: Number(r.running), capacity: r.capacity === null ? null : Number(r.capacity), full: r.full },
    ]),
  );
}

/** `waitingFor` of a node whose task's workers are all busy: "worker slots 10/10 (1 worker)". */
export function describeFullWorkers(served: ServedQueue): string {
  return `worker slots ${served.running}/${served.capacity ?? "?"} (${served.workers} worker${served.workers === 1 ? "" : "s"})`;
}
