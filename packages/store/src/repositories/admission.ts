import { sql } from "drizzle-orm";
import type { Db } from "../connect.js";
import type { FlowConcurrency } from "../schema/index.js";
import type { Json } from "../types.js";
import { lockKey, rows, uuidList } from "./raw.js";
import { firstNodeOf, type FirstNodeRow, type ReadyNode } from "./ready-node.js";

/** How many held runs one admission pass of a flow looks at. */
const ADMIT_WINDOW = 1000;

export type { FlowConcurrency };

export interface FlowSettingsRow {
  flow: string;
  maxConcurrentRuns: number | null;
  schedule: Json;
  concurrency?: FlowConcurrency | null | undefined;
  /** Options the flow computes with functions in code (`idempotencyKey`, `businessKey`); null when not recorded. */
  keyFunctions?: string[] | null | undefined;
}

/** Whether the flow's runs are written held and started by admission (a cap or a limit per key). */
export function admitsRuns(settings: FlowSettingsRow | undefined): boolean {
  return settings?.maxConcurrentRuns != null || settings?.concurrency != null;
}

/**
 * What coordinators act on for a flow; the Runtime writes it (code options, then YAML) at start.
 * Registering a flow brings a retired one back into use: the answer says when it had been retired.
 */
export async function saveFlowSettings(db: Db, settings: FlowSettingsRow): Promise<{ retiredAt: Date | null }> {
  const [row] = await rows<{ retired_at: string | null }>(
    db,
    sql`
    with before as (select retired_at from flow_settings where flow = ${settings.flow})
    insert into flow_settings (flow, max_concurrent_runs, schedule, concurrency, key_functions, updated_at)
    values (${settings.flow}, ${settings.maxConcurrentRuns}, ${JSON.stringify(settings.schedule)}::jsonb,
      ${JSON.stringify(settings.concurrency ?? null)}::jsonb, ${JSON.stringify(settings.keyFunctions ?? null)}::jsonb, now())
    on conflict (flow) do update set max_concurrent_runs = excluded.max_concurrent_runs,
      schedule = excluded.schedule, concurrency = excluded.concurrency, key_functions = excluded.key_functions,
      retired_at = null, updated_at = now()
    returning (select retired_at from before)`,
  );
  return { retiredAt: row?.retired_at ? new Date(row.retired_at) : null };
}

export async function flowSettings(db: Db, flow: string): Promise<FlowSettingsRow | undefined> {
  const [row] = await rows<{
    max_concurrent_runs: number | null;
    schedule: Json;
    concurrency: FlowConcurrency | null;
    key_functions: string[] | null;
  }>(db, sql`select max_concurrent_runs, schedule, concurrency, key_functions from flow_settings where flow = ${flow}`);
  return row
    ? {
        flow,
        maxConcurrentRuns: row.max_concurrent_runs,
        schedule: row.schedule ?? null,
        concurrency: row.concurrency ?? null,
        keyFunctions: row.key_functions ?? null,
      }
    : undefined;
}

export async function flowsWithHeldRuns(db: Db): Promise<string[]> {
  const found = await rows<{ flow: string }>(db, sql`select distinct flow from held_runs`);
  return found.map((r) => r.flow);
}

/** Runs of the flow admitted and not finished: what `maxConcurrentRuns` counts. */
const activeOfFlow = (flow: string) => sql`
  select count(*)::int from runs r
  where r.flow = ${flow} and r.status in ('pending', 'running')
    and not exists (select 1 from held_runs h where h.run_id = r.id)`;

const activeOfBackfill = sql`
  select count(*)::int from backfill_runs br join runs r on r.id = br.run_id
  where br.backfill_id = b.id and r.status in ('pending', 'running')
    and not exists (select 1 from held_runs h where h.run_id = r.id)`;

/**
 * Releases a flow's held runs, oldest first, while the flow is under `maxConcurrentRuns` (and a
 * backfill's run while its backfill is under its own cap): their first nodes become `queued` and
 * are returned for enqueueing. One pass per flow at a time cluster-wide (advisory lock), so two
 * coordinators never both admit into the last free slot. Held rows of runs that ended (cancelled
 * while held) are dropped.
 */
export async function admitHeldRuns(db: Db, flow: string): Promise<Admitted> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(${lockKey(`ax.admit:${flow}`)})`);
    await tx.execute(sql`
      delete from held_runs h using runs r
      where h.flow = ${flow} and r.id = h.run_id and r.status not in ('pending', 'running')`);
    const [state] = await rows<{ cap: number | null; concurrency: FlowConcurrency | null; active: number }>(
      tx,
      sql`select s.max_concurrent_runs as cap, s.concurrency, (${activeOfFlow(flow)}) as active
        from (select 1) one left join flow_settings s on s.flow = ${flow}`,
    );
    let free = state?.cap == null ? Number.POSITIVE_INFINITY : state.cap - state.active;
    const keyed = state?.concurrency ?? null;
    const cancel: RunToCancel[] = [];
    // Runs superseded on their key, and keys whose holders are letting go: their newest run starts at the next pass.
    const superseded = new Set<string>();
    const lettingGo = new Set<string>();
    if (keyed?.strategy === "cancel_in_progress") {
      for (const s of await supersededRuns(tx, flow, keyed)) {
        cancel.push({
          runId: s.run_id,
          reason: `superseded by run ${s.newest} on concurrency key ${s.key} (${keyed.max}/${keyed.max}): strategy cancel_in_progress`,
        });
        superseded.add(s.run_id);
        if (!s.held) lettingGo.add(s.key);
      }
    }
    if (free <= 0) return { ready: [], cancel };
    const held = await heldCandidates(tx, flow, keyed);
    const perKey = keyed ? await activeByKey(tx, flow, keyed) : new Map<string, string[]>();
    const backfillIds = [...new Set(held.flatMap((h) => (h.backfill_id ? [h.backfill_id] : [])))];
    const backfills = new Map(
      backfillIds.length === 0
        ? []
        : (
            await rows<{ id: string; cap: number; active: number; status: string }>(
              tx,
              sql`select b.id, b.max_concurrent_runs as cap, b.status, (${activeOfBackfill}) as active
                from backfills b where b.id in ${uuidList(backfillIds)}`,
            )
          ).map((b) => [b.id, { free: b.status === "active" ? b.cap - b.active : 0 }]),
    );
    const released: string[] = [];
    for (const h of held) {
      if (free <= 0) break;
      if (superseded.has(h.run_id) || lettingGo.has(h.key!)) continue;
      const backfill = h.backfill_id ? backfills.get(h.backfill_id) : undefined;
      // A backfill at its own cap waits without holding back the flow's other runs.
      if (backfill && backfill.free <= 0) continue;
      if (keyed) {
        const holders = perKey.get(h.key!) ?? [];
        if (holders.length >= keyed.max) {
          const reason = `concurrency key ${h.key} (${holders.length}/${keyed.max})`;
          if (keyed.strategy === "cancel_newest") cancel.push({ runId: h.run_id, reason: `${reason} was busy: strategy cancel_newest` });
          continue;
        }
        perKey.set(h.key!, [...holders, h.run_id]);
      }
      if (backfill) backfill.free--;
      free--;
      released.push(h.run_id);
    }
    if (released.length === 0) return { ready: [], cancel };
    await tx.execute(sql`delete from held_runs where run_id in ${uuidList(released)}`);
    // A released run keeps its trigger's timing: due at its runAt (a delayed job), at its priority.
    const ready = await rows<FirstNodeRow>(
      tx,
      sql`
      update node_runs n set status = 'queued', attempt = 1, queued_at = greatest(now(), r.run_at)
      from runs r
      where r.id = n.run_id and n.run_id in ${uuidList(released)} and n.status = 'pending' and n.deps_remaining = 0
      returning n.run_id, n.node_key, n.task, n.queue, r.flow_version_id, r.priority,
        greatest(0, ceil(extract(epoch from (r.run_at - now())) * 1000))::int as delay_ms`,
    );
    return { ready: ready.map(firstNodeOf), cancel };
  });
}

/** A run admission decided to cancel (a key's `cancel_newest` / `cancel_in_progress`), and why. */
export interface RunToCancel {
  runId: string;
  reason: string;
}

export interface Admitted {
  /** First nodes of released runs, to enqueue. */
  ready: ReadyNode[];
  cancel: RunToCancel[];
}

/** A run's business key for the flow's `concurrency`: the payload at the dotted path, "null" when missing. */
function keyOf(keyed: FlowConcurrency) {
  return sql`coalesce(r.payload #>> ${`{${keyed.key.split(".").join(",")}}`}::text[], 'null')`;
}

/**
 * A held run (`r`) whose trigger's `delay` / `runAt` has come: one not due yet takes no slot of
 * `maxConcurrentRuns` (a cap on running runs), and is admitted by the first pass after it is due.
 */
const isDue = sql`(r.run_at is null or r.run_at <= now())`;

/**
 * Held runs to consider, oldest first: the flow's own, and of each active backfill only as many
 * as its cap lets start, so that a backfill of a million ticks cannot fill the window and hide
 * the runs triggered after it. With a limit per key, at most `max` per key too (the newest for
 * `cancel_in_progress`, whose older runs are superseded), so that one key's
 * long line does not hide the other keys' runs.
 */
async function heldCandidates(
  tx: Db,
  flow: string,
  keyed: FlowConcurrency | null,
): Promise<{ run_id: string; backfill_id: string | null; key: string | null }[]> {
  const held = sql`
    (select h.run_id, h.backfill_id, h.seq from held_runs h join runs r on r.id = h.run_id
      where h.flow = ${flow} and h.backfill_id is null and ${isDue} order by h.seq limit ${ADMIT_WINDOW})
    union all
    (select h.run_id, h.backfill_id, h.seq from backfills b
      cross join lateral (
        select run_id, backfill_id, seq from held_runs where backfill_id = b.id order by seq limit b.max_concurrent_runs
      ) h
      where b.flow = ${flow} and b.status = 'active')`;
  if (!keyed) {
    return rows(tx, sql`select run_id, backfill_id, null as key from (${held}) c order by seq limit ${ADMIT_WINDOW}`);
  }
  return rows(
    tx,
    sql`
    select run_id, backfill_id, key from (
      select h.run_id, h.backfill_id, h.seq, ${keyOf(keyed)} as key,
        row_number() over (partition by ${keyOf(keyed)} order by h.seq ${keyed.strategy === "cancel_in_progress" ? sql`desc` : sql`asc`}) as nth
      from held_runs h join runs r on r.id = h.run_id where h.flow = ${flow} and ${isDue}
        and (h.backfill_id is null or h.run_id in (select run_id from (${held}) c where c.backfill_id is not null))
    ) x where nth <= ${keyed.max} order by seq limit ${ADMIT_WINDOW}`,
  );
}

/**
 * For `cancel_in_progress`: the runs of each key older than its newest `max`, among the runs
 * holding it and the held runs that are due, with the newest run of their key. A burst of runs of
 * one key leaves only the newest, whatever order admission passes see them in.
 */
async function supersededRuns(
  tx: Db,
  flow: string,
  keyed: FlowConcurrency,
): Promise<{ run_id: string; key: string; newest: string; held: boolean }[]> {
  return rows(
    tx,
    sql`
    select run_id, key, newest, held from (
      select c.id as run_id, c.key, c.held, first_value(c.id) over w as newest, row_number() over w as nth
      from (
        select r.id::text as id, ${keyOf(keyed)} as key, r.created_at, ${isDue} as due,
          exists (select 1 from held_runs h where h.run_id = r.id) as held
        from runs r
        where r.flow = ${flow} and r.status in ('pending', 'running')
      ) c
      -- A held run not due yet (a trigger's delay) supersedes nothing until it is.
      where not c.held or c.due
      window w as (partition by c.key order by c.created_at desc, c.id desc)
    ) x where nth > ${keyed.max}`,
  );
}

/**
 * Of `runIds`, the runs not finished, oldest first (by creation, ties by id): who a task's
 * `cancel_in_progress` key keeps, the newest, and who it supersedes.
 */
export async function unfinishedOldestFirst(db: Db, runIds: readonly string[]): Promise<string[]> {
  if (runIds.length === 0) return [];
  const found = await rows<{ id: string }>(
    db,
    sql`select id::text as id from runs where id in ${uuidList([...runIds])} and status in ('pending', 'running')
      order by created_at, id`,
  );
  return found.map((r) => r.id);
}

/** The flow's admitted, unfinished runs by business key. */
async function activeByKey(tx: Db, flow: string, keyed: FlowConcurrency): Promise<Map<string, string[]>> {
  const found = await rows<{ key: string; ids: string[] }>(
    tx,
    sql`
    select ${keyOf(keyed)} as key, array_agg(r.id::text) as ids from runs r
    where r.flow = ${flow} and r.status in ('pending', 'running')
      and not exists (select 1 from held_runs h where h.run_id = r.id)
    group by 1`,
  );
  return new Map(found.map((r) => [r.key, r.ids]));
}

/**
 * Why a held run waits, for RunInfo/TaskRunInfo `waitingFor` ("maxConcurrentRuns 2/2"), or null
 * for a run that is not held.
 */
export async function waitingFor(db: Db, runId: string): Promise<string | null> {
  const [row] = await rows<{
    flow: string;
    cap: number | null;
    active: number;
    bf_cap: number | null;
    bf_active: number | null;
    bf_status: string | null;
    run_at: string | null;
  }>(
    db,
    sql`
    select h.flow, s.max_concurrent_runs as cap, case when r.run_at > now() then r.run_at end as run_at,
      (select count(*)::int from runs r where r.flow = h.flow and r.status in ('pending', 'running')
        and not exists (select 1 from held_runs x where x.run_id = r.id)) as active,
      b.max_concurrent_runs as bf_cap, b.status as bf_status,
      (${activeOfBackfill}) as bf_active
    from held_runs h
    join runs r on r.id = h.run_id
    left join flow_settings s on s.flow = h.flow
    left join backfills b on b.id = h.backfill_id
    where h.run_id = ${runId}`,
  );
  if (!row) return null;
  if (row.run_at !== null) return `due at ${new Date(row.run_at).toISOString()}`;
  if (row.cap !== null && row.active >= row.cap) return `maxConcurrentRuns ${row.active}/${row.cap}`;
  if (row.bf_status === "cancelled") return "backfill cancelled";
  if (row.bf_cap !== null && (row.bf_active ?? 0) >= row.bf_cap) return `backfill maxConcurrentRuns ${row.bf_active}/${row.bf_cap}`;
  const keyed = (await flowSettings(db, row.flow))?.concurrency;
  if (keyed) {
    const [own] = await rows<{ key: string }>(db, sql`select ${keyOf(keyed)} as key from runs r where r.id = ${runId}`);
    const holders = (await activeByKey(db, row.flow, keyed)).get(own?.key ?? "null")?.length ?? 0;
    if (holders >= keyed.max) return `concurrency key ${own?.key} (${holders}/${keyed.max})`;
  }
  // A slot came free and no admission pass has run since: the coordinator releases it shortly.
  return "admission: a slot is free, released within about a second";
}
