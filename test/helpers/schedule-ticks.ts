import type { Isolated } from "./isolated.js";

export interface TickRow {
  at: number;
  status: "created" | "skipped" | "queued";
  reason: string | null;
  run_id: string | null;
  run_logical: number | null;
  run_trigger: string | null;
  run_status: string | null;
  created: number | null;
  started: number | null;
  finished: number | null;
}

/** A flow's recorded ticks, oldest first, with their runs' times (epoch ms). */
export async function ticksOf(env: Isolated, flow: string): Promise<TickRow[]> {
  const rows = await env.sql<Record<string, unknown>>(
    `select t.logical_date as at, t.status, t.reason, t.run_id, r.logical_date as run_logical, r.trigger as run_trigger,
       r.status as run_status, r.created_at as created, r.started_at as started, r.finished_at as finished
     from schedule_ticks t left join runs r on r.id = t.run_id where t.flow = $1 order by t.logical_date`,
    [flow],
  );
  const ms = (v: unknown) => (v === null ? null : new Date(v as string).getTime());
  return rows.map((r) => ({
    at: ms(r.at)!,
    status: r.status as TickRow["status"],
    reason: r.reason as string | null,
    run_id: r.run_id as string | null,
    run_logical: ms(r.run_logical),
    run_trigger: r.run_trigger as string | null,
    run_status: r.run_status as string | null,
    created: ms(r.created),
    started: ms(r.started),
    finished: ms(r.finished),
  }));
}

/** Seconds between consecutive ticks; all 1 when there is no gap. */
export const steps = (ticks: { at: number }[]) => ticks.slice(1).map((t, i) => (t.at - ticks[i]!.at) / 1000);
