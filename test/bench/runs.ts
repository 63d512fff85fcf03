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
 * Waits until every run in `ids` succeeded (one count query per poll); returns the last one's
 * `finished_at` in ms since the epoch (PostgreSQL's clock: the poll only detects the end).
 */
export async function waitForRuns(env: Isolated, ids: string[], timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [row] = await env.sql<{ success: number; failed: number; last: number | null }>(
      `select count(*) filter (where status = 'success')::int as success,
              count(*) filter (where status in ('failed', 'cancelled'))::int as failed,
              extract(epoch from max(finished_at)) * 1000 as last
       from runs where id = any($1::uuid[])`,
      [ids],
    );
    if (row!.failed > 0) throw new Error(`${row!.failed} of ${ids.length} no-op runs did not succeed; this is a bug`);
    if (row!.success >= ids.length) return Number(row!.last);
    if (Date.now() > deadline) throw new Error(`only ${row!.success}/${ids.length} runs succeeded within ${timeoutMs} ms`);
    await sleep(25);
  }
}
