import { randomUUID } from "node:crypto";
import { desc, lt, sql } from "drizzle-orm";
import { alertLog } from "../schema/alerts.js";
import type { Json } from "../types.js";
import type { Db } from "../connect.js";
import { rows } from "./raw.js";

export interface AlertKey {
  /** The `alerts:` group it goes to: a flow listed in two groups alerts both, each in its own silence window. */
  group: string;
  /** The trigger: `task_failed`, `consecutive_failures`, `slow_run`, `stuck_running`, `recovered`. */
  kind: string;
  flow: string;
  /** Empty for run-level alerts. */
  task: string;
  /** Error name + normalised message, or empty. */
  fingerprint: string;
}

export interface AlertClaim {
  /** True for exactly one claimant per key per silence window. */
  send: boolean;
  /** Alerts of this key held back before this one (send), or so far (not send). */
  suppressed: number;
  /** Not sent, and counted as held back: false for a condition found again (see `since`). */
  held: boolean;
}

/**
 * Claims the right to send the alert of `key`: granted when none was sent within `silenceMs`.
 * One upsert under the key's row lock, so concurrent coordinators agree on a single sender.
 * `since`, for a condition that scans find again: when its newest occurrence began. A claim whose
 * `since` is no later than one already counted is that condition found again, not a new alert
 * held back, whichever coordinator counted it.
 */
export async function claimAlert(db: Db, key: AlertKey, silenceMs: number, opts: { since?: Date } = {}): Promise<AlertClaim> {
  const claim = randomUUID();
  const since = opts.since?.toISOString() ?? null;
  const silent = sql`d.last_sent_at > clock_timestamp() - make_interval(secs => ${silenceMs / 1000})`;
  const again = sql`(${since}::timestamptz is not null and d.counted_since is not null and ${since}::timestamptz <= d.counted_since)`;
  const [row] = await rows<{ claim: string; suppressed: number; before: number | null }>(
    db,
    sql`
    insert into alert_dedupe as d (alert_group, kind, flow, task, fingerprint, last_sent_at, suppressed, claim, counted_since)
    values (${key.group}, ${key.kind}, ${key.flow}, ${key.task}, ${key.fingerprint}, clock_timestamp(), 0, ${claim}, ${since}::timestamptz)
    on conflict (alert_group, kind, flow, task, fingerprint) do update set
      last_sent_at = case when ${silent} then d.last_sent_at else clock_timestamp() end,
      claim = case when ${silent} then d.claim else ${claim}::uuid end,
      suppressed = case when not ${silent} then 0 when ${again} then d.suppressed else d.suppressed + 1 end,
      counted_since = greatest(d.counted_since, ${since}::timestamptz)
    returning d.claim, d.suppressed, (select suppressed from alert_dedupe o
      where o.alert_group = d.alert_group and o.kind = d.kind and o.flow = d.flow and o.task = d.task
        and o.fingerprint = d.fingerprint) as before`,
  );
  // The subquery reads the row as it was before this statement: the count this claim started from.
  const before = Number(row!.before ?? 0);
  if (row!.claim === claim) return { send: true, suppressed: before, held: false };
  return { send: false, suppressed: Number(row!.suppressed), held: Number(row!.suppressed) > before };
}

/** Counts one more terminal failure of a task in a row; answers the streak so far. */
export async function recordTerminalFailure(db: Db, flow: string, task: string): Promise<{ failures: number; alerted: boolean }> {
  const [row] = await rows<{ failures: number; alerted: boolean }>(
    db,
    sql`
    insert into alert_streaks as s (flow, task, failures) values (${flow}, ${task}, 1)
    on conflict (flow, task) do update set failures = s.failures + 1, updated_at = now()
    returning failures, alerted`,
  );
  return { failures: Number(row!.failures), alerted: row!.alerted };
}

/** Notes that an alert went out during the task's current failure streak, so its next success sends a recovery notice. */
export async function markStreakAlerted(db: Db, flow: string, task: string): Promise<void> {
  await db.execute(sql`update alert_streaks set alerted = true where flow = ${flow} and task = ${task}`);
}

/** A success ends the task's failure streak; answers the streak it ended, if any. */
export async function endFailureStreak(db: Db, flow: string, task: string): Promise<{ failures: number; alerted: boolean } | undefined> {
  const [row] = await rows<{ failures: number; alerted: boolean }>(
    db,
    sql`delete from alert_streaks where flow = ${flow} and task = ${task} returning failures, alerted`,
  );
  return row && { failures: Number(row.failures), alerted: row.alerted };
}

/**
 * A recovery closes the task's incident: its failure alerts' silence windows end, so the next
 * failure alerts again instead of leaving "recovered" the last word for the rest of the window.
 * Answers how many of its failure alerts were held back since the last one sent: the recovery
 * notice says so, as the next alert of a window does.
 */
export async function endTaskSilences(db: Db, flow: string, task: string): Promise<number> {
  const [row] = await rows<{ suppressed: number | null }>(
    db,
    sql`with ended as (
      delete from alert_dedupe where flow = ${flow} and task = ${task} and kind in ('task_failed', 'consecutive_failures')
      returning suppressed
    ) select sum(suppressed)::int as suppressed from ended`,
  );
  return Number(row?.suppressed ?? 0);
}

/** How long a finished run took, from its start (or creation) to its end; undefined for an unknown or unfinished run. */
export async function runDurationMs(db: Db, runId: string): Promise<number | undefined> {
  const [row] = await rows<{ ms: number | null }>(
    db,
    sql`select extract(epoch from (finished_at - coalesce(started_at, created_at))) * 1000 as ms from runs where id = ${runId}`,
  );
  return row?.ms == null ? undefined : Number(row.ms);
}

export interface StuckRun {
  runId: string;
  flow: string;
  businessKey: string | null;
  startedAt: Date;
  /** How many runs of its flow are stuck, listed or not. */
  stuckInFlow: number;
}

/**
 * Runs `running` for longer than `olderThanMs`, oldest first, at most `perFlow` of each flow: a
 * flow with many stuck runs must not hide another's.
 */
export async function stuckRuns(db: Db, olderThanMs: number, perFlow = 100): Promise<StuckRun[]> {
  const found = await rows<{ id: string; flow: string; business_key: string | null; started_at: Date | string; stuck: number }>(
    db,
    sql`
    select id, flow, business_key, started_at, stuck from (
      select id, flow, business_key, started_at,
        row_number() over (partition by flow order by started_at, id) as n,
        count(*) over (partition by flow)::int as stuck
      from runs
      where status = 'running' and started_at < now() - make_interval(secs => ${olderThanMs / 1000})
    ) s
    where n <= ${perFlow}
    order by started_at, id`,
  );
  return found.map((r) => ({
    runId: r.id,
    flow: r.flow,
    businessKey: r.business_key,
    startedAt: new Date(r.started_at),
    stuckInFlow: Number(r.stuck),
  }));
}

/** An alert as sinks receive it, as far as the history reads it. */
interface SentAlert {
  group: string;
  kind: string;
  flow: string;
  runId: string | null;
}

export interface LoggedAlert extends SentAlert {
  id: number;
  sentAt: string;
  alert: Json;
  deliveries: Json;
}

/** Keeps a sent alert and its sinks' answers for the history (`GET /api/alerts`, the console). */
export async function logAlert(db: Db, entry: { alert: Json; deliveries: Json }): Promise<void> {
  await db.insert(alertLog).values(entry);
}

/** Sent alerts, newest first; `before` (an id) pages to older ones. */
export async function listAlerts(
  db: Db,
  options: { limit?: number | undefined; before?: number | undefined } = {},
): Promise<LoggedAlert[]> {
  const found = await db
    .select()
    .from(alertLog)
    .where(options.before === undefined ? undefined : lt(alertLog.id, options.before))
    .orderBy(desc(alertLog.id))
    .limit(options.limit ?? 50);
  return found.map((row) => {
    const { group, kind, flow, runId } = row.alert as unknown as SentAlert;
    return {
      id: row.id,
      sentAt: row.sentAt.toISOString(),
      group,
      kind,
      flow,
      runId: runId ?? null,
      alert: row.alert,
      deliveries: row.deliveries,
    };
  });
}
