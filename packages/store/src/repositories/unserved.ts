import { sql } from "drizzle-orm";
import type { Db } from "../connect.js";
import { rows } from "./raw.js";
import type { ReadyNode } from "./ready-node.js";

export interface UnservedNode extends ReadyNode {
  /**
   * How long it has been due to start, by PostgreSQL's clock; for a node left running by a lost
   * worker, how long since that worker was last heard from.
   */
  waitedMs: number;
  /** Its run's flow and business key, for the events its failure raises. */
  flow: string;
  businessKey: string | null;
  /**
   * Set when the node is `running` this attempt under a worker that stopped heartbeating (killed,
   * its machine gone): the worker's id, or null when even its row is gone. Unset for a node that
   * never started.
   */
  lostWorker?: string | null;
}

/**
 * Nodes no live worker serves within `graceMs`, whose task queue (`group.task`) no live worker
 * fetches from: workers fetch only from the queues of tasks they define, so after a rolling deploy
 * that dropped a task nobody ever takes these. Two kinds: due to start (queued, retrying) for
 * `graceMs`, and running under a worker whose lease lapsed `graceMs` ago. The second is left
 * behind by the only workers of a queue being killed and not restarted: a worker of the queue
 * would close that attempt as crashed when BullMQ hands it the job back, but there is none.
 * While no worker at all is alive, nothing is returned: the fleet is down (an outage, a deploy
 * gone wrong), not this task undeployed, and the work waits for workers to come back.
 */
export async function unservedNodes(db: Db, window: { graceMs: number; leaseMs: number; limit: number }): Promise<UnservedNode[]> {
  const grace = sql`make_interval(secs => ${window.graceMs / 1000})`;
  const lease = sql`make_interval(secs => ${window.leaseMs / 1000})`;
  const served = sql`exists (
        select 1 from workers w
        where w.heartbeat_at >= now() - ${lease} and (n.queue || '.' || n.task) = any(w.queues))`;
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
    running: boolean;
    lost_worker: string | null;
  }>(
    db,
    sql`
    with unserved as (
      select n.run_id, n.node_key, n.task, n.queue, n.attempt, r.flow_version_id, r.flow, r.business_key,
        false as running, null::text as lost_worker,
        greatest(n.queued_at, n.next_retry_at) as since
      from node_runs n join runs r on r.id = n.run_id
      where n.status in ('queued', 'retrying')
        and greatest(n.queued_at, n.next_retry_at) < now() - ${grace}
        and not ${served}
      union all
      select n.run_id, n.node_key, n.task, n.queue, n.attempt, r.flow_version_id, r.flow, r.business_key,
        true, a.worker, coalesce(w.heartbeat_at, a.started_at)
      from node_runs n join runs r on r.id = n.run_id
        join attempts a on a.run_id = n.run_id and a.node_key = n.node_key and a.n = n.attempt
        left join workers w on w.id = a.worker
      where n.status = 'running'
        and (w.id is null or w.heartbeat_at < now() - ${lease})
        and coalesce(w.heartbeat_at, a.started_at) < now() - ${grace}
        and not ${served}
    )
    select u.*, extract(epoch from now() - u.since) * 1000 as waited_ms
    from unserved u
    where exists (select 1 from workers where heartbeat_at >= now() - ${lease})
    order by u.since
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
    ...(r.running ? { lostWorker: r.lost_worker } : {}),
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

/**
 * The task queues live workers serve, with their slots, for telling why a node waits. With a
 * Redis `prefix`, only workers on that prefix count (and those older than 0.19, which do not say):
 * a worker on another prefix never sees the jobs queued on this one.
 */
export async function servedQueues(db: Db, leaseMs: number, prefix?: string): Promise<Map<string, ServedQueue>> {
  const onPrefix = prefix === undefined ? sql`true` : sql`(prefix is null or prefix = ${prefix})`;
  const found = await rows<{ queue: string; workers: number; running: number; capacity: number | null; full: boolean }>(
    db,
    sql`
    with live as (
      select id, queues, concurrency from workers
      where heartbeat_at >= now() - make_interval(secs => ${leaseMs / 1000}) and ${onPrefix}
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

/** Each task queue live workers serve on a Redis prefix other than `prefix`, with how many serve it on which. */
export async function queuesServedElsewhere(db: Db, leaseMs: number, prefix: string): Promise<Map<string, ServedElsewhere>> {
  const found = await rows<{ queue: string; prefix: string; workers: number }>(
    db,
    sql`
    select q as queue, w.prefix, count(*)::int as workers
    from workers w, unnest(w.queues) as q
    where w.heartbeat_at >= now() - make_interval(secs => ${leaseMs / 1000}) and w.prefix <> ${prefix}
    group by q, w.prefix
    order by workers desc, w.prefix`,
  );
  const served = new Map<string, ServedElsewhere>();
  for (const r of found) {
    const entry = served.get(r.queue) ?? { workers: 0, prefixes: [] };
    entry.workers += Number(r.workers);
    entry.prefixes.push(r.prefix);
    served.set(r.queue, entry);
  }
  return served;
}

/** Live workers on a Redis prefix other than `prefix`, per prefix, with their hosts. */
export async function workersOnOtherPrefixes(
  db: Db,
  leaseMs: number,
  prefix: string,
): Promise<{ prefix: string; workers: number; hosts: string[] }[]> {
  const found = await rows<{ prefix: string; workers: number; hosts: string[] }>(
    db,
    sql`
    select prefix, count(*)::int as workers, array_agg(distinct hostname order by hostname) as hosts
    from workers
    where heartbeat_at >= now() - make_interval(secs => ${leaseMs / 1000}) and prefix <> ${prefix}
    group by prefix
    order by prefix`,
  );
  return found.map((r) => ({ prefix: r.prefix, workers: Number(r.workers), hosts: r.hosts }));
}

/** Live workers serving a queue on other Redis prefixes than the one asked about. */
export interface ServedElsewhere {
  workers: number;
  prefixes: string[];
}

/**
 * `waitingFor` of a node whose queue no worker serves on `prefix` but some serve on another: the
 * usual cause is a process started without the `--prefix` (`AX_PREFIX`) the others have.
 */
export function describeServedElsewhere(queue: string, prefix: string, elsewhere: ServedElsewhere): string {
  const n = elsewhere.workers;
  const on = elsewhere.prefixes.map((p) => `"${p}"`).join(", ");
  return `no worker serves queue ${queue} on Redis prefix "${prefix}"; ${n} worker${n === 1 ? "" : "s"} serve${n === 1 ? "s" : ""} it on ${on}: give every process the same --prefix (AX_PREFIX)`;
}

/** `waitingFor` of a node whose task's workers are all busy: "worker slots 10/10 (1 worker)". */
export function describeFullWorkers(served: ServedQueue): string {
  return `worker slots ${served.running}/${served.capacity ?? "?"} (${served.workers} worker${served.workers === 1 ? "" : "s"})`;
}
