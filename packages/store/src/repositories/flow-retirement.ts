import { sql, type SQL } from "drizzle-orm";
import { AxUnknownFlowError } from "@ax/common";
import type { Db } from "../connect.js";
import { toStorableText } from "../json.js";
import { listFlowNames } from "./flow-definitions.js";
import { rows } from "./raw.js";

/** Each flow's current version, the one new runs get: the one registered last. */
const currentVersions = sql`(select distinct on (name) name, version, dag from flow_definitions
  order by name, registered_at desc, version desc)`;

/** The distinct tasks of a version's graph. */
const tasksOf = (dag: SQL) => sql`coalesce((select array_agg(distinct n->>'task') from jsonb_array_elements(${dag}->'nodes') n), '{}')`;

/**
 * A process `p` that reported within `liveMs` and whose code defines `flow`, or may: one of a
 * release before 0.21 reports no flows (`flows` null).
 */
const definesLive = (flow: SQL, liveMs: number) =>
  sql`(${flow} = any(p.flows) or p.flows is null) and p.heartbeat_at >= now() - make_interval(secs => ${liveMs / 1000})`;

const UNFINISHED = sql`status in ('pending', 'running')`;

/** What `ax flow retire` checks, read in its transaction with the flow's settings row locked. */
export interface RetirementState {
  retiredAt: Date | null;
  /** Seconds since a Runtime last registered the flow (or rewrote its settings applying a config version). */
  registeredSecondsAgo: number;
  /**
   * Processes that reported within the live window and whose code defines the flow, or that run a
   * release before 0.21, which does not report its flows (`flows` null): either may run its code.
   */
  definers: { id: string; hostname: string; pid: number }[];
  /** Runs of the flow not finished (`pending`, which includes held and delayed ones, or `running`). */
  unfinished: { count: number; sample: string[] };
  /** Tasks of the flow's graph that no other flow in use runs: retiring the flow retires them too. */
  ownTasks: string[];
}

/**
 * Locks the flow's settings row until the transaction ends and reads what retiring it depends on;
 * undefined when no flow of that name was ever registered. A Runtime registering the flow at the
 * same time waits on the lock and brings it back into use after the retirement commits.
 */
export async function lockFlowForRetirement(tx: Db, flow: string, liveMs: number): Promise<RetirementState | undefined> {
  const [registered] = await rows<{ tasks: string[] }>(
    tx,
    sql`select ${tasksOf(sql`dag`)} as tasks from ${currentVersions} f where name = ${flow}`,
  );
  if (!registered) return undefined;
  await tx.execute(sql`insert into flow_settings (flow, updated_at) values (${flow}, to_timestamp(0)) on conflict (flow) do nothing`);
  const [settings] = await rows<{ retired_at: string | null; ago: number }>(
    tx,
    sql`select retired_at, extract(epoch from now() - updated_at)::float8 as ago from flow_settings where flow = ${flow} for update`,
  );
  const definers = await rows<{ id: string; hostname: string; pid: number }>(
    tx,
    sql`select id, hostname, pid from processes p where ${definesLive(sql`${flow}`, liveMs)} order by hostname, pid`,
  );
  const unfinished = await rows<{ id: string; count: number }>(
    tx,
    sql`select id, count(*) over ()::int as count from runs
      where flow = ${flow} and ${UNFINISHED} order by created_at limit 5`,
  );
  const [shared] = await rows<{ tasks: string[] }>(
    tx,
    sql`select coalesce(array_agg(distinct n->>'task'), '{}') as tasks
      from (select dag from ${currentVersions} f where name <> ${flow}
        and not exists (select 1 from flow_settings s where s.flow = f.name and s.retired_at is not null)) d
      cross join lateral jsonb_array_elements(d.dag->'nodes') n`,
  );
  const sharedTasks = new Set(shared?.tasks ?? []);
  return {
    retiredAt: settings?.retired_at ? new Date(settings.retired_at) : null,
    registeredSecondsAgo: Number(settings?.ago ?? Number.POSITIVE_INFINITY),
    definers,
    unfinished: { count: unfinished[0]?.count ?? 0, sample: unfinished.map((r) => r.id) },
    ownTasks: registered.tasks.filter((task) => !sharedTasks.has(task)).sort(),
  };
}

/** Marks the flow retired and its stored schedule removed, in the caller's transaction; returns when. */
export async function markFlowRetired(tx: Db, flow: string): Promise<Date> {
  const [row] = await rows<{ retired_at: string }>(
    tx,
    sql`update flow_settings set retired_at = now() where flow = ${flow} returning retired_at`,
  );
  await tx.execute(sql`update schedules set removed_at = now(), updated_at = now() where flow = ${flow} and removed_at is null`);
  return new Date(row!.retired_at);
}

/** When the flow was retired; undefined for one in use or never registered. */
export async function flowRetiredAt(db: Db, flow: string): Promise<Date | undefined> {
  const [row] = await rows<{ retired_at: string | null }>(db, sql`select retired_at from flow_settings where flow = ${flow}`);
  return row?.retired_at ? new Date(row.retired_at) : undefined;
}

/** The error for a name no flow in use has: it says so for a retired flow, and lists the flows in use otherwise. */
export async function unknownFlowError(db: Db, flow: string): Promise<AxUnknownFlowError> {
  // A name PostgreSQL cannot hold names no flow; asking would only make it refuse the query.
  const retiredAt = toStorableText(flow) === flow ? await flowRetiredAt(db, flow) : undefined;
  return new AxUnknownFlowError(flow, retiredAt ? [] : await listFlowNames(db), retiredAt);
}

/** A registered flow as `ax flows` lists it: whether any live process still defines it, and its runs. */
export interface FlowState {
  name: string;
  /** The current version (the one new runs get) and its node count. */
  version: number;
  nodes: number;
  /** Live processes whose code defines it, those of a release before 0.21 (which report no flows) counted as defining every flow. */
  definedBy: number;
  /** When its newest run was created; null when it has none. */
  lastRunAt: Date | null;
  /** Runs not finished (`pending`, held and delayed included, or `running`). */
  unfinishedRuns: number;
  retiredAt: Date | null;
}

/** Every flow in use by name, and the retired ones too when `retired`. */
export async function listFlowStates(db: Db, options: { liveMs: number; retired?: boolean }): Promise<FlowState[]> {
  const found = await rows<{
    name: string;
    version: number;
    nodes: number;
    defined_by: number;
    last_run_at: string | null;
    unfinished: number;
    retired_at: string | null;
  }>(
    db,
    sql`
    select f.name, f.version, jsonb_array_length(f.dag->'nodes')::int as nodes,
      (select count(*)::int from processes p where ${definesLive(sql`f.name`, options.liveMs)}) as defined_by,
      (select max(r.created_at) from runs r where r.flow = f.name) as last_run_at,
      (select count(*)::int from runs r where r.flow = f.name and ${UNFINISHED}) as unfinished,
      s.retired_at
    from ${currentVersions} f
    left join flow_settings s on s.flow = f.name
    where ${options.retired ? sql`true` : sql`s.retired_at is null`}
    order by f.name`,
  );
  return found.map((row) => ({
    name: row.name,
    version: row.version,
    nodes: row.nodes,
    definedBy: row.defined_by,
    lastRunAt: row.last_run_at ? new Date(row.last_run_at) : null,
    unfinishedRuns: row.unfinished,
    retiredAt: row.retired_at ? new Date(row.retired_at) : null,
  }));
}

/** How many live processes define each registered flow, by name (see `definesLive`); only `flow`'s when it is given. */
export async function liveDefinerCounts(db: Db, liveMs: number, flow?: string): Promise<Map<string, number>> {
  const names = flow === undefined ? sql`true` : sql`name = ${flow}`;
  const found = await rows<{ name: string; n: number }>(
    db,
    sql`select f.name, count(p.id)::int as n from (select distinct name from flow_definitions where ${names}) f
      left join processes p on ${definesLive(sql`f.name`, liveMs)} group by f.name`,
  );
  return new Map(found.map((r) => [r.name, r.n]));
}

/** The flows retired and not brought back, by name, with the tasks of their current versions. */
export async function listRetiredFlows(db: Db): Promise<{ flow: string; tasks: string[] }[]> {
  return rows<{ flow: string; tasks: string[] }>(
    db,
    sql`select f.name as flow, ${tasksOf(sql`f.dag`)} as tasks from ${currentVersions} f
      join flow_settings s on s.flow = f.name where s.retired_at is not null order by f.name`,
  );
}
