import { eq, sql } from "drizzle-orm";
import type { Db } from "../connect.js";
import { processes } from "../schema/index.js";
import { rows } from "./raw.js";

export interface ProcessIdentity {
  id: string;
  hostname: string;
  pid: number;
  roles: string[];
  configVersion: number | null;
  /** The flows its code defines (none for `ax server` without an entry). */
  flows: string[];
}

/** Registers the process or renews its row with the config version it applies now. */
export async function heartbeatProcess(db: Db, process: ProcessIdentity): Promise<void> {
  await db
    .insert(processes)
    .values({ ...process, heartbeatAt: sql`now()` })
    .onConflictDoUpdate({
      target: processes.id,
      set: { heartbeatAt: sql`now()`, roles: process.roles, configVersion: process.configVersion, flows: process.flows },
    });
}

export async function removeProcess(db: Db, id: string): Promise<void> {
  await db.delete(processes).where(eq(processes.id, id));
}

/** Whether a process with the coordinator role renewed its row within `leaseMs`. */
export async function coordinatorAlive(db: Db, leaseMs: number): Promise<boolean> {
  const [row] = await rows<{ alive: boolean }>(
    db,
    sql`select exists (select 1 from processes
      where 'coordinator' = any(roles) and heartbeat_at >= now() - make_interval(secs => ${leaseMs / 1000})) as alive`,
  );
  return row?.alive === true;
}

/** Deletes the rows of processes silent for more than `olderThanMs` (killed, not stopped); returns how many. */
export async function removeDeadProcesses(db: Db, olderThanMs: number): Promise<number> {
  const removed = await rows<{ id: string }>(
    db,
    sql`delete from processes where heartbeat_at < now() - make_interval(secs => ${olderThanMs / 1000}) returning id`,
  );
  return removed.length;
}

/** A process of the cluster and the config version it last reported (`ax config show --cluster`). */
export interface ProcessConfigState {
  id: string;
  hostname: string;
  pid: number;
  /** Its `Runtime` roles (`coordinator`, `worker`, `api`); a worker older than 0.14 has no process row and shows as `worker`. */
  roles: string[];
  /** The queues a worker serves; empty for a process without the worker role. */
  queues: string[];
  configVersion: number | null;
  /** A worker's slots (`maxConcurrency`); null without the worker role. */
  concurrency: number | null;
  heartbeatAt: Date;
  /** Whether it reported within the `liveMs` asked for. */
  live: boolean;
}

/**
 * Every process row, with its worker row's queues and slots, and every worker row of a process
 * that has none (started by an older version); the newest report first.
 */
export async function listClusterProcesses(db: Db, liveMs: number): Promise<ProcessConfigState[]> {
  const found = await rows<Omit<ProcessConfigState, "heartbeatAt"> & { heartbeatAt: string | Date }>(
    db,
    sql`
    select coalesce(p.id, w.id) as "id",
      coalesce(p.hostname, w.hostname) as "hostname",
      coalesce(p.pid, w.pid) as "pid",
      coalesce(p.roles, array['worker']) as "roles",
      coalesce(w.queues, '{}') as "queues",
      case when p.id is null then w.config_version else p.config_version end as "configVersion",
      w.concurrency as "concurrency",
      greatest(p.heartbeat_at, w.heartbeat_at) as "heartbeatAt",
      greatest(p.heartbeat_at, w.heartbeat_at) > now() - make_interval(secs => ${liveMs / 1000}) as "live"
    from processes p
    full join workers w on w.id = p.id
    order by 8 desc, 1`,
  );
  return found.map((row) => ({ ...row, heartbeatAt: new Date(row.heartbeatAt) }));
}
