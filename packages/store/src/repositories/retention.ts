import { getTableColumns, sql, type SQL } from "drizzle-orm";
import type { PgTable } from "drizzle-orm/pg-core";
import type { Db, Store } from "../connect.js";
import * as tables from "../schema/index.js";
import { lockKey, rows, uuidList } from "./raw.js";
import { AxPruneBusyError } from "@ax/common";

const FINISHED = sql`status in ('success', 'failed', 'cancelled')`;

export interface PruneOptions {
  /** Finished runs created and finished before this go, with the rest of the history older than it. */
  cutoff: Date;
  /** Copy runs, nodes, attempts and task logs into the `*_archive` tables before deleting them. */
  archive?: boolean | undefined;
  /** Runs (and keys, ticks) per transaction. @defaultValue 1000 */
  batch?: number | undefined;
  /** A pause between transactions, leaving the database to other work. @defaultValue 0 */
  pauseMs?: number | undefined;
  /** After each transaction, with the runs pruned so far. */
  onProgress?: ((prunedRuns: number) => void) | undefined;
  /** Stops between transactions; what was committed stays pruned. */
  signal?: AbortSignal | undefined;
}

/** What a prune removes (dry run) or removed. */
export interface PruneCounts {
  runs: number;
  /** Task log lines of those runs (deleted, or archived, with them). */
  logLines: number;
  onceKeys: number;
  scheduleTicks: number;
  /** Entries of the sent alerts' history (deleted, never archived). */
  alerts: number;
}

export interface PruneResult extends PruneCounts {
  archived: boolean;
}

/** What `prune` with the same cutoff would remove now (`ax prune --dry-run`, the progress bar's total). */
export async function countPrunable(db: Db, cutoff: Date): Promise<PruneCounts> {
  const before = cutoff.toISOString();
  const [counts] = await rows<PruneCounts>(
    db,
    sql`select
      (select count(*)::int from runs where created_at < ${before}::timestamptz and ${FINISHED} and finished_at < ${before}::timestamptz) as "runs",
      (select count(*)::int from attempt_logs l join runs on runs.id = l.run_id
        where runs.created_at < ${before}::timestamptz and ${FINISHED} and runs.finished_at < ${before}::timestamptz) as "logLines",
      (select count(*)::int from once_keys where ${oldOnceKey(before)}) as "onceKeys",
      (select count(*)::int from schedule_ticks t where ${oldTick(before, sql`t`)}) as "scheduleTicks",
      (select count(*)::int from alert_log where sent_at < ${before}::timestamptz) as "alerts"`,
  );
  return counts!;
}

/**
 * Deletes (or archives, then deletes) the history older than `cutoff`: finished runs with their
 * nodes, attempts, task logs and idempotency keys, completed once keys, sent alerts, and schedule ticks (each
 * flow's newest tick is kept: catch-up counts missed ticks from it). Work goes in short
 * transactions of `batch` runs, found through the runs' (flow, created_at) index, so triggers
 * and attempts are never held up for long. One prune at a time cluster-wide: throws
 * AxPruneBusyError when another holds the lock.
 */
export async function prune(store: Pick<Store, "withSession">, options: PruneOptions): Promise<PruneResult> {
  return store.withSession(async (db) => {
    const [lock] = await rows<{ locked: boolean }>(db, sql`select pg_try_advisory_lock(${lockKey("ax.prune")}) as locked`);
    if (!lock?.locked) throw new AxPruneBusyError();
    try {
      return await pruneLocked(db, options);
    } finally {
      await db.execute(sql`select pg_advisory_unlock(${lockKey("ax.prune")})`);
    }
  });
}

async function pruneLocked(db: Db, options: PruneOptions): Promise<PruneResult> {
  const batch = options.batch ?? 1000;
  const before = options.cutoff.toISOString();
  const archive = options.archive ?? false;
  const result: PruneResult = { runs: 0, logLines: 0, onceKeys: 0, scheduleTicks: 0, alerts: 0, archived: archive };
  const pause = () => (options.pauseMs ? new Promise((resolve) => setTimeout(resolve, options.pauseMs)) : Promise.resolve());
  const stopped = () => options.signal?.aborted === true;
  const flows = (await rows<{ name: string }>(db, sql`select distinct name from flow_definitions order by name`)).map((r) => r.name);

  for (const flow of flows) {
    let after: { createdAt: string; id: string } | undefined;
    for (;;) {
      if (stopped()) return result;
      const page = await pruneRunPage(db, { flow, before, after, batch, archive });
      result.runs += page.runs;
      result.logLines += page.logLines;
      if (page.runs > 0) options.onProgress?.(result.runs);
      if (!page.next) break;
      after = page.next;
      await pause();
    }
  }
  for (;;) {
    if (stopped()) return result;
    const [deleted] = await rows<{ n: number }>(
      db,
      sql`with d as (delete from once_keys where key in (select key from once_keys where ${oldOnceKey(before)} limit ${batch}) returning 1)
          select count(*)::int as n from d`,
    );
    result.onceKeys += deleted!.n;
    if (deleted!.n < batch) break;
    await pause();
  }
  for (;;) {
    if (stopped()) return result;
    const [deleted] = await rows<{ n: number }>(
      db,
      sql`with d as (delete from alert_log where id in (select id from alert_log where sent_at < ${before}::timestamptz limit ${batch}) returning 1)
          select count(*)::int as n from d`,
    );
    result.alerts += deleted!.n;
    if (deleted!.n < batch) break;
    await pause();
  }
  for (const flow of flows) {
    for (;;) {
      if (stopped()) return result;
      const [deleted] = await rows<{ n: number }>(
        db,
        sql`with d as (
              delete from schedule_ticks where (flow, logical_date) in (
                select flow, logical_date from schedule_ticks t where t.flow = ${flow} and ${oldTick(before, sql`t`)} limit ${batch})
              returning 1)
            select count(*)::int as n from d`,
      );
      result.scheduleTicks += deleted!.n;
      if (deleted!.n < batch) break;
      await pause();
    }
  }
  return result;
}

/** Completed (or its claim long lapsed) before the cutoff, and not of a run still unfinished: its retry must still find it. */
const oldOnceKey = (before: string) =>
  sql`created_at < ${before}::timestamptz and (claimed_by is null or lease_until < ${before}::timestamptz)
      and not exists (select 1 from runs r where r.id = once_keys.run_id and r.status in ('pending', 'running'))`;

/** A tick older than the cutoff, not waiting to start a run, and not its flow's newest. */
const oldTick = (before: string, t: SQL) =>
  sql`${t}.logical_date < ${before}::timestamptz and ${t}.created_at < ${before}::timestamptz
      and not (${t}.status = 'queued' and ${t}.run_id is null)
      and ${t}.logical_date < (select max(logical_date) from schedule_ticks m where m.flow = ${t}.flow)`;

interface RunPage {
  runs: number;
  logLines: number;
  /** Where the next page starts; unset after the flow's last page. */
  next: { createdAt: string; id: string } | undefined;
}

/**
 * One transaction: the next `batch` runs of `flow` created before the cutoff (oldest first, by
 * keyset), of which the finished ones are archived and deleted. Unfinished ones are stepped over.
 */
async function pruneRunPage(
  db: Db,
  page: { flow: string; before: string; after: { createdAt: string; id: string } | undefined; batch: number; archive: boolean },
): Promise<RunPage> {
  const { flow, before, after, batch, archive } = page;
  return db.transaction(async (tx) => {
    const from = after
      ? sql`and created_at >= ${after.createdAt}::timestamptz and (created_at, id) > (${after.createdAt}::timestamptz, ${after.id}::uuid)`
      : sql``;
    // Ordered by the column, not the text alias of the same name: sorting the text could not
    // walk the index, and each page sorted every remaining run of the flow (243 ms a page at 200k).
    const found = await rows<{ id: string; created_at: string; done: boolean }>(
      tx,
      sql`select id, created_at::text as created_at, (${FINISHED} and finished_at < ${before}::timestamptz) as done
          from runs where flow = ${flow} and created_at < ${before}::timestamptz ${from}
          order by runs.created_at, runs.id limit ${batch}`,
    );
    const last = found[found.length - 1];
    const next = found.length === batch && last ? { createdAt: last.created_at, id: last.id } : undefined;
    const ids = found.filter((r) => r.done).map((r) => r.id);
    if (ids.length === 0) return { runs: 0, logLines: 0, next };
    const doomed = uuidList(ids);
    if (archive) {
      await tx.execute(copyInto(tables.runsArchive, tables.runs, sql`id in ${doomed}`));
      await tx.execute(copyInto(tables.nodeRunsArchive, tables.nodeRuns, sql`run_id in ${doomed}`));
      await tx.execute(copyInto(tables.attemptsArchive, tables.attempts, sql`run_id in ${doomed}`));
      await tx.execute(copyInto(tables.attemptLogsArchive, tables.attemptLogs, sql`run_id in ${doomed}`));
    }
    const [logs] = await rows<{ n: number }>(
      tx,
      sql`with d as (delete from attempt_logs where run_id in ${doomed} returning 1) select count(*)::int as n from d`,
    );
    // Nodes and attempts have no foreign key to their run (see the schema); idempotency keys,
    // held and backfill links go by cascade.
    await tx.execute(sql`delete from attempts where run_id in ${doomed}`);
    await tx.execute(sql`delete from node_runs where run_id in ${doomed}`);
    const [deleted] = await rows<{ n: number }>(
      tx,
      sql`with d as (delete from runs where id in ${doomed} returning 1) select count(*)::int as n from d`,
    );
    return { runs: deleted!.n, logLines: logs!.n, next };
  });
}

/**
 * Copies by the live table's column names, so a column added to it later without its archive
 * fails the prune loudly rather than losing data (a test keeps the two in step).
 */
function copyInto(archive: PgTable, live: PgTable, where: SQL): SQL {
  const names = Object.values(getTableColumns(live)).map((c) => c.name);
  const list = sql.raw(names.map((n) => `"${n}"`).join(", "));
  return sql`insert into ${archive} (${list}) select ${list} from ${live} where ${where}`;
}
