import { setTimeout as sleep } from "node:timers/promises";
import type { Client } from "ax-scheduler";
import type { Isolated } from "../helpers/isolated.js";

/** `runs` runs of `flow` triggered with `triggerFlows`, `batch` payloads per call, one call after the other; their ids. */
export async function triggerInBatches(client: Client, flow: string, runs: number, batch: number, tag = flow): Promise<string[]> {
  const ids: string[] = [];
  for (let sent = 0; sent < runs; sent += batch) {
    const payloads = Array.from({ length: Math.min(batch, runs - sent) }, (_, i) => ({ tag, i: sent + i }));
    ids.push(...(await client.triggerFlows(flow, payloads)));
  }
  return ids;
}

/**
 * Waits until every run in `ids` succeeded; returns the last one's `finished_at` in ms since the
 * epoch (PostgreSQL's clock: the poll only detects the end). While runs are in flight it only
 * asks whether any run of the schema is unfinished, through the status index, so the poll costs
 * the system under test next to nothing; the scenarios run one after the other, so those are
 * `ids`. Once none is, one query over `ids` checks they all succeeded.
 */
export async function waitForRuns(env: Isolated, ids: string[], timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [busy] = await env.sql<{ unfinished: boolean }>(
      `select exists (select 1 from runs where status in ('pending', 'running')) as unfinished`,
    );
    if (!busy!.unfinished) {
      const [row] = await env.sql<{ success: number; failed: number; last: number | null }>(
        `select count(*) filter (where status = 'success')::int as success,
                count(*) filter (where status in ('failed', 'cancelled'))::int as failed,
                extract(epoch from max(finished_at)) * 1000 as last
         from runs where id = any($1::uuid[])`,
        [ids],
      );
      if (row!.failed > 0) throw new Error(`${row!.failed} of ${ids.length} no-op runs did not succeed; this is a bug`);
      if (row!.success >= ids.length) return Number(row!.last);
    }
    if (Date.now() > deadline) throw new Error(`runs of ${ids.length} still unfinished after ${timeoutMs} ms`);
    await sleep(25);
  }
}
