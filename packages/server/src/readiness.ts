import { within } from "@ax/store";

/** How long each dependency may take to answer before the process counts as not ready. */
export const READINESS_TIMEOUT_MS = 2000;

/** ioredis states in which a command only waits: the connection is lost or closed. */
const DOWN = new Set(["reconnecting", "close", "end"]);

/** What `/readyz` checks: PostgreSQL (`select 1`) and Redis (`PING`). Structural, so a worker need not load the API. */
export interface ReadinessDeps {
  db: { execute(query: string): PromiseLike<unknown> };
  redis: { readonly status: string; ping(): Promise<string> };
  /** @defaultValue 2000 */
  timeoutMs?: number | undefined;
}

/** `/readyz`'s answer: `{ ok: true }` (200), or `{ ok: false, postgres, redis }` naming each dependency's problem or "ok" (503). */
export type Readiness = { ok: true } | { ok: false; postgres: string; redis: string };

/** One line, short: the answer is public (like /healthz), it must not carry a stack or a whole query. */
function describe(outcome: { done: boolean; error?: unknown }, timeoutMs: number): string {
  if (outcome.done) return "ok";
  if (outcome.error === undefined) return `no answer within ${timeoutMs} ms`;
  const message = outcome.error instanceof Error ? outcome.error.message : String(outcome.error);
  return (message.split("\n")[0] || "failed").slice(0, 200);
}

/** Asks PostgreSQL and Redis at once, each within `timeoutMs`; never throws. */
export async function checkReadiness(deps: ReadinessDeps): Promise<Readiness> {
  const timeoutMs = deps.timeoutMs ?? READINESS_TIMEOUT_MS;
  const [postgres, redis] = await Promise.all([
    within(
      Promise.resolve().then(() => deps.db.execute("select 1")),
      timeoutMs,
    ),
    // A connection waiting to reconnect would queue the PING until Redis is back: say so at once.
    DOWN.has(deps.redis.status)
      ? Promise.resolve({ done: false as const, error: new Error(`the Redis connection is ${deps.redis.status}`) })
      : within(deps.redis.ping(), timeoutMs),
  ]);
  if (postgres.done && redis.done) return { ok: true };
  return { ok: false, postgres: describe(postgres, timeoutMs), redis: describe(redis, timeoutMs) };
}
