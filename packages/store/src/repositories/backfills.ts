import { sql, type SQL } from "drizzle-orm";
import type { Db } from "../connect.js";
import { createRuns } from "./create-run.js";
import type { FlowVersion } from "./flow-definitions.js";
import { recordset, rows } from "./raw.js";
import type { TaskFailure } from "../types.js";
import { backfillTickKey, scheduleTx } from "./schedules.js";

/** Runs written per statement while creating a backfill. */
const CHUNK = 500;

export interface NewBackfill {
  id: string;
  flow: FlowVersion;
  from: Date;
  to: Date;
  maxConcurrentRuns: number;
  ticks: Date[];
}

export interface BackfillInfo {
  id: string;
  flow: string;
  from: string;
  to: string;
  maxConcurrentRuns: number;
  /** `finished` once every tick's run has ended (whatever its outcome); `cancelled` by a cancel. */
  status: "active" | "finished" | "cancelled";
  createdAt: string;
  ticks: number;
  /** Ticks whose run ended, whatever its outcome (`pruned` ones included). */
  done: number;
  succeeded: number;
  failed: number;
  cancelled: number;
  /** Ticks whose ended run retention removed since: done, with no outcome left to count. */
  pruned: number;
  running: number;
  /** Ticks waiting for a slot (held) or not started yet. */
  waiting: number;
}

/**
 * Writes the backfill, one held run per tick that has none yet, and the links from the backfill
 * to every tick's run, in one transaction; admission then releases the runs at most
 * `maxConcurrentRuns` at a time. Returns how many runs were created.
 */
export async function createBackfill(db: Db, backfill: NewBackfill, runId: () => string): Promise<number> {
  return db.transaction(async (tx) => {
    // The lock the schedule's tick decisions hold: a tick and a backfill of it never both make a run.
    await scheduleTx.lockFlow(tx, backfill.flow.name);
    await tx.execute(sql`
      insert into backfills (id, flow, range_from, range_to, max_concurrent_runs, ticks, status)
      values (${backfill.id}, ${backfill.flow.name}, ${backfill.from.toISOString()}, ${backfill.to.toISOString()},
        ${backfill.maxConcurrentRuns}, ${backfill.ticks.length}, 'active')`);
    let created = 0;
    for (let i = 0; i < backfill.ticks.length; i += CHUNK) {
      const chunk = backfill.ticks.slice(i, i + CHUNK);
      // A tick already run (by the schedule, another backfill or a rerun of either) keeps its newest
      // run: the backfill links it instead of running the date again.
      const existing = await scheduleTx.tickRuns(tx, backfill.flow.name, chunk);
      const ticks = chunk.filter((tick) => !existing.has(tick.toISOString()));
      const answers = await createRuns(
        tx,
        ticks.map((tick) => ({
          id: runId(),
          flow: backfill.flow,
          trigger: "backfill" as const,
          payload: null,
          idempotencyKey: backfillTickKey(backfill.flow.name, tick),
          logicalDate: tick,
          held: { backfillId: backfill.id },
        })),
      );
      created += answers.filter((a) => a.created).length;
      const links = [
        ...answers.map((a, j) => ({ run_id: a.runId, logical_date: ticks[j]!.toISOString() })),
        ...[...existing].map(([logicalDate, run]) => ({ run_id: run, logical_date: logicalDate })),
      ];
      await tx.execute(sql`
        insert into backfill_runs (backfill_id, run_id, logical_date)
        select ${backfill.id}, run_id, logical_date from ${recordset(links, "run_id uuid, logical_date timestamptz")} as l
        on conflict do nothing`);
    }
    return created;
  });
}

type Row = {
  id: string;
  flow: string;
  range_from: string | Date;
  range_to: string | Date;
  max_concurrent_runs: number;
  status: "active" | "cancelled";
  created_at: string | Date;
  ticks: number;
  succeeded: number;
  failed: number;
  cancelled: number;
  running: number;
  linked: number;
};

const iso = (d: string | Date) => new Date(d).toISOString();

function toInfo(r: Row): BackfillInfo {
  // Every tick is linked to its run when the backfill is written, and a retry relinks the tick: a
  // link missing is a run retention deleted, which it does only to ended runs.
  const pruned = Math.max(0, r.ticks - r.linked);
  const done = r.succeeded + r.failed + r.cancelled + pruned;
  return {
    id: r.id,
    flow: r.flow,
    from: iso(r.range_from),
    to: iso(r.range_to),
    maxConcurrentRuns: r.max_concurrent_runs,
    status: r.status === "cancelled" ? "cancelled" : done >= r.ticks ? "finished" : "active",
    createdAt: iso(r.created_at),
    ticks: r.ticks,
    done,
    succeeded: r.succeeded,
    failed: r.failed,
    cancelled: r.cancelled,
    pruned,
    running: r.running,
    waiting: r.ticks - done - r.running,
  };
}

const progress = sql`
  select b.id, b.flow, b.range_from, b.range_to, b.max_concurrent_runs, b.status, b.created_at, b.ticks,
    count(*) filter (where r.status = 'success')::int as succeeded,
    count(*) filter (where r.status = 'failed')::int as failed,
    count(*) filter (where r.status = 'cancelled')::int as cancelled,
    count(*) filter (where r.status = 'running')::int as running,
    count(br.run_id)::int as linked
  from backfills b
  left join backfill_runs br on br.backfill_id = b.id
  left join runs r on r.id = br.run_id`;

export async function backfillInfo(db: Db, id: string): Promise<BackfillInfo | undefined> {
  const [row] = await rows<Row>(db, sql`${progress} where b.id = ${id} group by b.id`);
  return row ? toInfo(row) : undefined;
}

/** Newest first. */
export async function listBackfills(db: Db, limit = 50): Promise<BackfillInfo[]> {
  return (await rows<Row>(db, sql`${progress} group by b.id order by b.created_at desc limit ${limit}`)).map(toInfo);
}

/** What cancelling a backfill's records did, and left for the caller. */
export interface CancelledBackfillRecords {
  /** Its runs already admitted and unfinished: the caller cancels them like any run. */
  active: string[];
  /** The held runs the cancel ended (never dispatched), for their `run_cancelled` events. */
  heldCancelled: { runId: string; flow: string; businessKey: string | null }[];
}

/**
 * Marks the backfill cancelled and ends its held runs (`cancelled`, never dispatched) in one
 * transaction; undefined for an unknown backfill. A run another active backfill also lists is that
 * one's to run (a held one is handed to it), and a backfill with no unfinished run is left as it
 * is: there is nothing to cancel, and its failed ticks may still be retried. `failureOf` is the
 * error each held run's nodes end with, as a cancelled run's do.
 */
export async function cancelBackfillRecords(
  db: Db,
  id: string,
  failureOf: (runId: string) => TaskFailure,
): Promise<CancelledBackfillRecords | undefined> {
  return db.transaction(async (tx) => {
    const [found] = await rows<{ unfinished: boolean }>(
      tx,
      sql`select exists (select 1 from backfill_runs br join runs r on r.id = br.run_id
          where br.backfill_id = b.id and r.status in ('pending', 'running')) as unfinished
        from backfills b where b.id = ${id} for update`,
    );
    if (!found) return undefined;
    if (!found.unfinished) return { active: [], heldCancelled: [] };
    await tx.execute(sql`update backfills set status = 'cancelled', cancelled_at = coalesce(cancelled_at, now()) where id = ${id}`);
    const sharedWith = (run: SQL) => sql`(select min(other.backfill_id::text)::uuid from backfill_runs other
      join backfills ob on ob.id = other.backfill_id
      where other.run_id = ${run} and other.backfill_id <> ${id} and ob.status = 'active')`;
    await tx.execute(sql`
      update held_runs h set backfill_id = ${sharedWith(sql`h.run_id`)}
      where h.backfill_id = ${id} and ${sharedWith(sql`h.run_id`)} is not null`);
    const held = await rows<{ run_id: string; flow: string; business_key: string | null }>(
      tx,
      sql`delete from held_runs h using runs r
        where h.backfill_id = ${id} and r.id = h.run_id and r.status = 'pending'
        returning h.run_id, r.flow, r.business_key`,
    );
    if (held.length > 0) {
      const errors = recordset(
        held.map((h) => ({ run_id: h.run_id, error: failureOf(h.run_id) })),
        "run_id uuid, error jsonb",
      );
      await tx.execute(sql`
        with nodes as (
          update node_runs n set status = 'cancelled', finished_at = now(), error = coalesce(n.error, e.error)
          from ${errors} e
          where n.run_id = e.run_id and n.status = 'pending'
        )
        update runs set status = 'cancelled', finished_at = now(), nodes_remaining = 0
        where id in (select e.run_id from ${errors} e)`);
    }
    const active = await rows<{ run_id: string }>(
      tx,
      // A schedule's run the backfill only linked is the schedule's: cancelling the backfill leaves it
      // (a retry of one, made by the backfill, is the backfill's).
      sql`select br.run_id from backfill_runs br join runs r on r.id = br.run_id
        where br.backfill_id = ${id} and r.status in ('pending', 'running') and r.trigger <> 'schedule'
          and ${sharedWith(sql`br.run_id`)} is null`,
    );
    return {
      active: active.map((r) => r.run_id),
      heldCancelled: held.map((h) => ({ runId: h.run_id, flow: h.flow, businessKey: h.business_key })),
    };
  });
}

/**
 * What `retryBackfill` needs: whether the backfill was cancelled, and the runs of its ticks that
 * failed or were cancelled, oldest tick first; undefined for an unknown backfill.
 */
export async function retryableBackfillRuns(
  db: Db,
  id: string,
): Promise<{ flow: string; cancelled: boolean; runIds: string[] } | undefined> {
  const [found] = await rows<{ flow: string; status: string }>(db, sql`select flow, status from backfills where id = ${id}`);
  if (!found) return undefined;
  const failed = await rows<{ run_id: string }>(
    db,
    sql`select br.run_id from backfill_runs br join runs r on r.id = br.run_id
      where br.backfill_id = ${id} and r.status in ('failed', 'cancelled') order by br.logical_date`,
  );
  return { flow: found.flow, cancelled: found.status === "cancelled", runIds: failed.map((r) => r.run_id) };
}

/**
 * Locks the ticks whose run is `runId`, in every backfill that lists it, for the transaction that
 * reruns it: false when none lists it any more (a concurrent retry already replaced it), and the
 * caller then writes nothing.
 */
export async function lockBackfillTicks(db: Db, runId: string): Promise<boolean> {
  return (await rows(db, sql`select 1 from backfill_runs where run_id = ${runId} for update`)).length > 0;
}

/** The ticks whose run was `from` now have `to` (a retry), in every backfill listing them: their progress counts the new run. */
export async function relinkBackfillRuns(db: Db, from: string, to: string): Promise<void> {
  await db.execute(sql`update backfill_runs set run_id = ${to} where run_id = ${from}`);
}
