import { eq, sql } from "drizzle-orm";
import type { Db } from "../connect.js";
import { workers } from "../schema/index.js";

export interface WorkerIdentity {
  id: string;
  hostname: string;
  pid: number;
  queues: string[];
}

/** Registers the worker or renews its lease; attempts of a worker whose lease lapses are presumed crashed. */
export async function heartbeatWorker(db: Db, worker: WorkerIdentity): Promise<void> {
  await db
    .insert(workers)
    .values({ ...worker, heartbeatAt: sql`now()` })
    .onConflictDoUpdate({ target: workers.id, set: { heartbeatAt: sql`now()`, queues: worker.queues } });
}

export async function removeWorker(db: Db, id: string): Promise<void> {
  await db.delete(workers).where(eq(workers.id, id));
}
