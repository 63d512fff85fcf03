import type { Isolated } from "./isolated.js";

/** One finished attempt as PostgreSQL recorded it (ms since the epoch). */
export interface Span {
  task: string;
  worker: string;
  start: number;
  end: number;
  weight?: number;
}

/** Every finished attempt of `task`, from the recorded start and finish times. */
export async function attemptSpans(env: Isolated, task: string): Promise<Span[]> {
  const found = await env.sql<{ task: string; worker: string; start: number; end: number }>(
    `select n.task, a.worker,
       extract(epoch from a.started_at) * 1000 as start, extract(epoch from a.finished_at) * 1000 as "end"
     from attempts a join node_runs n on n.run_id = a.run_id and n.node_key = a.node_key
     where n.task = $1 and a.finished_at is not null`,
    [task],
  );
  return found.map((r) => ({ ...r, start: Number(r.start), end: Number(r.end) }));
}

/** The most weight (slots; 1 each by default) held at any instant; an end and a start at the same instant do not overlap. */
export function maxOverlap(spans: Span[]): number {
  const events = spans.flatMap((s) => [
    { at: s.start, delta: s.weight ?? 1 },
    { at: s.end, delta: -(s.weight ?? 1) },
  ]);
  events.sort((a, b) => a.at - b.at || a.delta - b.delta);
  let held = 0;
  let most = 0;
  for (const e of events) {
    held += e.delta;
    most = Math.max(most, held);
  }
  return most;
}

export async function waitUntil(condition: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
