import { eq, sql } from "drizzle-orm";
import type { Db } from "../connect.js";
import { workers } from "../schema/index.js";
import { rows } from "./raw.js";

export interface WorkerIdentity {
  id: string;
  hostname: string;
  pid: number;
  queues: string[];
  /** Attempts it runs at once: with its running attempts, whether a queued node waits for a free slot. */
  concurrency?: number | undefined;
  /** Its Redis key prefix, so a queue served only on another prefix can be told from an unserved one. */
  prefix?: string | undefined;
  /** The config version the process applies now, written with each renewal (`ax config show --cluster`). */
  configVersion?: (() => number | null) | undefined;
}

/**
 * Registers the worker or renews its lease; attempts of a worker whose lease lapses are presumed
 * crashed. Pass `Store.leases`, so a main pool busy with long transactions cannot delay it.
 * Returns when the database server last started: a change means it restarted meanwhile.
 */
export async function heartbeatWorker(db: Db, worker: WorkerIdentity): Promise<{ serverStartedAt: Date }> {
  const { configVersion, ...identity } = worker;
  const version = configVersion?.() ?? null;
  const [row] = await db
    .insert(workers)
    .values({ ...identity, configVersion: version, heartbeatAt: sql`now()` })
    .onConflictDoUpdate({
      target: workers.id,
      set: {
        heartbeatAt: sql`now()`,
        queues: worker.queues,
        configVersion: version,
        concurrency: worker.concurrency ?? null,
        prefix: worker.prefix ?? null,
      },
    })
    .returning({ serverStartedAt: sql<string>`pg_postmaster_start_time()` });
  return { serverStartedAt: new Date(row!.serverStartedAt) };
}

export async function removeWorker(db: Db, id: string): Promise<void> {
  await db.delete(workers).where(eq(workers.id, id));
}

/**
 * Deletes workers whose lease lapsed more than `olderThanMs` ago, except those a running attempt
 * still names: that attempt is yet to be taken over, and the row says when its lease lapsed.
 * Returns how many rows went.
 */
export async function removeDeadWorkers(db: Db, olderThanMs: number): Promise<number> {
  const removed = await rows<{ id: string }>(
    db,
    sql`
    delete from workers w
    where w.heartbeat_at < now() - make_interval(secs => ${olderThanMs / 1000})
      and not exists (
        select 1 from node_runs n
        join attempts a on a.run_id = n.run_id and a.node_key = n.node_key and a.n = n.attempt
        where n.status = 'running' and a.worker = w.id
      )
    returning w.id`,
  );
  return removed.length;
}

/** Attempts running now per worker id (its load); a worker running none is absent. */
export async function runningAttemptsByWorker(db: Db): Promise<Map<string, number>> {
  const found = await rows<{ worker: string; running: number }>(
    db,
    sql`
    select a.worker, count(*)::int as running
    from node_runs n
    join attempts a on a.run_id = n.run_id and a.node_key = n.node_key and a.n = n.attempt
    where n.status = 'running'
    group by a.worker`,
  );
  return new Map(found.map((r) => [r.worker, r.running]));
}
