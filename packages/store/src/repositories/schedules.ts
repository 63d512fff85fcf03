import { sql } from "drizzle-orm";
import type { Db } from "../connect.js";
import type { CatchUp, Overlap, RunStatus, TickStatus } from "../types.js";
import { lockKey, recordset, rows, textList } from "./raw.js";

export interface ScheduleDefinition {
  flow: string;
  cron: string;
  timezone: string;
  overlap: Overlap;
  catchUp: CatchUp;
  maxCatchUp: number;
}

export interface StoredSchedule extends ScheduleDefinition {
  paused: boolean;
  resumedAt: Date | null;
  updatedAt: Date;
}

export interface TickRecord {
  flow: string;
  logicalDate: Date;
  status: TickStatus;
  reason: string | null;
  runId: string | null;
  createdAt: Date;
}

export interface ScheduleSummary extends StoredSchedule {
  lastTick: (TickRecord & { runStatus: RunStatus | null }) | null;
}

interface ScheduleRow {
  flow: string;
  cron: string;
  timezone: string;
  overlap: Overlap;
  catch_up: CatchUp;
  max_catch_up: number;
  paused: boolean;
  resumed_at: Date | string | null;
  updated_at: Date | string;
}

interface TickRow {
  flow: string;
  logical_date: Date | string;
  status: TickStatus;
  reason: string | null;
  run_id: string | null;
  created_at: Date | string;
}

// Raw statements bypass drizzle's column mapping: PGlite answers timestamps as text.
const toSchedule = (r: ScheduleRow): StoredSchedule => ({
  flow: r.flow,
  cron: r.cron,
  timezone: r.timezone,
  overlap: r.overlap,
  catchUp: r.catch_up,
  maxCatchUp: Number(r.max_catch_up),
  paused: r.paused,
  resumedAt: r.resumed_at === null ? null : new Date(r.resumed_at),
  updatedAt: new Date(r.updated_at),
});

const toTick = (r: TickRow): TickRecord => ({
  flow: r.flow,
  logicalDate: new Date(r.logical_date),
  status: r.status,
  reason: r.reason,
  runId: r.run_id,
  createdAt: new Date(r.created_at),
});

/**
 * Stores the schedules of a coordinator's flows: `flows` are every flow it defines, `schedules`
 * those that have one. A flow defined without a schedule loses its stored one, so its ticks stop;
 * its row is only marked removed. `paused` is left as it is, so a pause outlives restarts and the
 * schedule's removal and return.
 */
export async function registerSchedules(db: Db, flows: string[], schedules: ScheduleDefinition[]): Promise<void> {
  await db.transaction(async (tx) => {
    if (schedules.length > 0) {
      await tx.execute(sql`
        insert into schedules (flow, cron, timezone, overlap, catch_up, max_catch_up)
        select flow, cron, timezone, overlap, catch_up, max_catch_up
        from ${recordset(
          schedules.map((s) => ({
            flow: s.flow,
            cron: s.cron,
            timezone: s.timezone,
            overlap: s.overlap,
            catch_up: s.catchUp,
            max_catch_up: s.maxCatchUp,
          })),
          "flow text, cron text, timezone text, overlap text, catch_up text, max_catch_up int",
        )} as x
        on conflict (flow) do update set cron = excluded.cron, timezone = excluded.timezone, overlap = excluded.overlap,
          catch_up = excluded.catch_up, max_catch_up = excluded.max_catch_up, removed_at = null,
          -- When the cron took its current form: catch-up owes no fire time before it (every
          -- coordinator's start registers the schedule again, which changes nothing).
          updated_at = case
            when schedules.cron is distinct from excluded.cron or schedules.timezone is distinct from excluded.timezone
              or schedules.removed_at is not null then now()
            else schedules.updated_at end`);
    }
    const unscheduled = flows.filter((f) => !schedules.some((s) => s.flow === f));
    if (unscheduled.length > 0) {
      await tx.execute(
        sql`update schedules set removed_at = now(), updated_at = now() where flow in ${textList(unscheduled)} and removed_at is null`,
      );
    }
  });
}

/** Sets `paused`; false when the flow has no stored schedule. */
export async function setSchedulePaused(db: Db, flow: string, paused: boolean): Promise<boolean> {
  const found = await rows<{ flow: string }>(
    db,
    sql`update schedules set paused = ${paused}, updated_at = now(),
      resumed_at = case when ${paused} then resumed_at when paused then now() else resumed_at end
    where flow = ${flow} and removed_at is null returning flow`,
  );
  return found.length > 0;
}

export async function getSchedules(db: Db, flows?: string[]): Promise<StoredSchedule[]> {
  const filter = flows ? sql`and flow in ${textList(flows)}` : sql``;
  return (await rows<ScheduleRow>(db, sql`select * from schedules where removed_at is null ${filter} order by flow`)).map(toSchedule);
}

/** Every stored schedule with its newest tick and that tick's run status. */
export async function listScheduleSummaries(db: Db): Promise<ScheduleSummary[]> {
  const found = await rows<ScheduleRow & { tick: TickRow | null; run_status: RunStatus | null }>(
    db,
    sql`
    select s.*, t.tick, r.status as run_status
    from schedules s
    left join lateral (
      select to_jsonb(x) as tick, x.run_id from schedule_ticks x where x.flow = s.flow order by x.logical_date desc limit 1
    ) t on true
    left join runs r on r.id = t.run_id
    where s.removed_at is null
    order by s.flow`,
  );
  return found.map((r) => ({ ...toSchedule(r), lastTick: r.tick ? { ...toTick(r.tick), runStatus: r.run_status } : null }));
}

export async function lastTickDate(db: Db, flow: string): Promise<Date | null> {
  const [row] = await rows<{ at: Date | string | null }>(db, sql`select max(logical_date) as at from schedule_ticks where flow = ${flow}`);
  return row?.at ? new Date(row.at) : null;
}

export async function listTicks(db: Db, flow: string): Promise<TickRecord[]> {
  return (await rows<TickRow>(db, sql`select * from schedule_ticks where flow = ${flow} order by logical_date`)).map(toTick);
}

/** The idempotency key of a backfilled tick: a tick has one backfill run however often it is backfilled. */
export function backfillTickKey(flow: string, tick: Date): string {
  return `backfill:${flow}:${tick.toISOString()}`;
}

/**
 * The primitives of a tick decision. Each is meant to run inside one transaction that holds
 * `scheduleTx.lockFlow`, so the decisions about one flow's ticks happen one at a time cluster-wide.
 */
export const scheduleTx = {
  async lockFlow(tx: Db, flow: string): Promise<void> {
    await tx.execute(sql`select pg_advisory_xact_lock(${lockKey(`ax.schedule:${flow}`)})`);
  },
  /** The schedule as stored now (another coordinator may have stored a newer one since this one read it). */
  async current(tx: Db, flow: string): Promise<Pick<StoredSchedule, "paused" | "cron" | "timezone" | "overlap" | "resumedAt"> | undefined> {
    const [row] = await rows<Pick<ScheduleRow, "paused" | "cron" | "timezone" | "overlap" | "resumed_at">>(
      tx,
      sql`select paused, cron, timezone, overlap, resumed_at from schedules where flow = ${flow} and removed_at is null`,
    );
    if (!row) return undefined;
    const { resumed_at, ...rest } = row;
    return { ...rest, resumedAt: resumed_at === null ? null : new Date(resumed_at) };
  },
  async tickExists(tx: Db, flow: string, logicalDate: Date): Promise<boolean> {
    const found = await rows(tx, sql`select 1 from schedule_ticks where flow = ${flow} and logical_date = ${logicalDate.toISOString()}`);
    return found.length > 0;
  },
  /**
   * The flow's runs due and not yet finished, oldest first: a run delayed to later is no overlap
   * yet. A backfill's runs (and its retries, reruns it lists) are left out: they run past dates
   * under the backfill's own cap, and a tick of today neither waits for them nor cancels them,
   * as cancelling a backfill leaves the schedule's runs alone.
   */
  async unfinishedRuns(tx: Db, flow: string): Promise<string[]> {
    const found = await rows<{ id: string }>(
      tx,
      sql`select id from runs r where flow = ${flow} and status in ('pending', 'running')
        and (run_at is null or run_at <= now()) and trigger <> 'backfill'
        and not (trigger = 'rerun' and exists (select 1 from backfill_runs b where b.run_id = r.id))
        order by created_at`,
    );
    return found.map((r) => r.id);
  },
  /** The tick buffered by `overlap: queue` that has no run yet. */
  async waitingTick(tx: Db, flow: string): Promise<Date | undefined> {
    const [row] = await rows<{ logical_date: Date | string }>(
      tx,
      sql`select logical_date from schedule_ticks where flow = ${flow} and status = 'queued' and run_id is null order by logical_date limit 1`,
    );
    return row ? new Date(row.logical_date) : undefined;
  },
  /**
   * Each of `ticks` that has a run of the flow, by logical date (ISO), with its newest one: the
   * schedule's or a backfill's run, or the latest rerun of it (reruns keep the logical date), so
   * a date rerun to success is not run or retried again, even once retention took its first run.
   */
  async tickRuns(tx: Db, flow: string, ticks: Date[]): Promise<Map<string, string>> {
    if (ticks.length === 0) return new Map();
    const found = await rows<{ logical_date: Date | string; run_id: string }>(
      tx,
      sql`select distinct on (logical_date) logical_date, id as run_id from runs
        where flow = ${flow} and logical_date = any(string_to_array(${ticks.map((t) => t.toISOString()).join(",")}, ',')::timestamptz[])
        order by logical_date, created_at desc, id desc`,
    );
    return new Map(found.map((r) => [new Date(r.logical_date).toISOString(), r.run_id]));
  },
  /** The run a backfill made for this tick, if one did (its idempotency key is the tick's). */
  async backfillRunOf(tx: Db, flow: string, logicalDate: Date): Promise<string | undefined> {
    const [row] = await rows<{ run_id: string }>(
      tx,
      sql`select run_id from idempotency_keys where flow = ${flow} and key = ${backfillTickKey(flow, logicalDate)}`,
    );
    return row?.run_id;
  },
  /** False when another coordinator recorded this tick first. */
  async insertTick(
    tx: Db,
    tick: { flow: string; logicalDate: Date; status: TickStatus; reason: string | null; runId: string | null },
  ): Promise<boolean> {
    const inserted = await rows(
      tx,
      sql`insert into schedule_ticks (flow, logical_date, status, reason, run_id)
        values (${tick.flow}, ${tick.logicalDate.toISOString()}, ${tick.status}, ${tick.reason}, ${tick.runId})
        on conflict (flow, logical_date) do nothing returning flow`,
    );
    return inserted.length > 0;
  },
  async attachRun(tx: Db, flow: string, logicalDate: Date, runId: string): Promise<void> {
    await tx.execute(sql`update schedule_ticks set run_id = ${runId} where flow = ${flow} and logical_date = ${logicalDate.toISOString()}`);
  },
  /** Flows among `flows` with a buffered tick waiting for its run. */
  async flowsWithWaitingTicks(db: Db, flows: string[]): Promise<string[]> {
    if (flows.length === 0) return [];
    const found = await rows<{ flow: string }>(
      db,
      sql`select distinct flow from schedule_ticks where flow in ${textList(flows)} and status = 'queued' and run_id is null`,
    );
    return found.map((r) => r.flow);
  },
};
