import { sql } from "drizzle-orm";
import { AxUnknownFlowError } from "@ax/common";
import type { Db } from "../connect.js";
import { toStorableText } from "../json.js";
import { listFlowNames } from "./flow-definitions.js";
import { rows } from "./raw.js";

/** What `ax flow retire` checks, read in its transaction with the flow's settings row locked. */
export interface RetirementState {
  retiredAt: Date | null;
  /** Seconds since a Runtime last registered the flow (or rewrote its settings applying a config version). */
  registeredSecondsAgo: number;
  /** Processes that reported within the live window and whose code defines the flow. */
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
    sql`select coalesce((select array_agg(distinct n->>'task') from jsonb_array_elements(dag->'nodes') n), '{}') as tasks
      from flow_definitions where name = ${flow} order by registered_at desc, version desc limit 1`,
  );
  if (!registered) return undefined;
  await tx.execute(sql`insert into flow_settings (flow, updated_at) values (${flow}, to_timestamp(0)) on conflict (flow) do nothing`);
  const [settings] = await rows<{ retired_at: string | null; ago: number }>(
    tx,
    sql`select retired_at, extract(epoch from now() - updated_at)::float8 as ago from flow_settings where flow = ${flow} for update`,
  );
  const definers = await rows<{ id: string; hostname: string; pid: number }>(
    tx,
    sql`select id, hostname, pid from processes
      where ${flow} = any(flows) and heartbeat_at >= now() - make_interval(secs => ${liveMs / 1000}) order by hostname, pid`,
  );
  const unfinished = await rows<{ id: string; count: number }>(
    tx,
    sql`select id, count(*) over ()::int as count from runs
      where flow = ${flow} and status in ('pending', 'running') order by created_at limit 5`,
  );
  const [shared] = await rows<{ tasks: string[] }>(
    tx,
    sql`select coalesce(array_agg(distinct n->>'task'), '{}') as tasks
      from (select distinct on (name) dag from flow_definitions
        where name <> ${flow} and not exists (select 1 from flow_settings s where s.flow = name and s.retired_at is not null)
        order by name, registered_at desc, version desc) d
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
