import { monitorEventLoopDelay } from "node:perf_hooks";
import { Redis } from "ioredis";
import pg from "pg";

/**
 * Counts PostgreSQL statements and Redis commands sent by this process, so each scenario can
 * report round trips per task. pnpm resolves one `pg` and one `ioredis` for the whole workspace
 * (store, BullMQ and this file), so patching the prototypes here sees every call.
 */
export interface Counts {
  pgQueries: number;
  /** Commands sent on their own: one network round trip each. */
  redisCommands: number;
  /** Commands sent inside a pipeline or MULTI (many per round trip). */
  redisPipelined: number;
}

const counts: Counts = { pgQueries: 0, redisCommands: 0, redisPipelined: 0 };
let installed = false;

/** With AX_BENCH_PROFILE=1: time spent waiting on each kind of statement (by its first words). */
export const statementTimes = new Map<string, { n: number; ms: number }>();
const timing = process.env.AX_BENCH_PROFILE === "1";
const loopDelay = monitorEventLoopDelay({ resolution: 5 });

function statementKey(arg: unknown): string {
  const text = typeof arg === "string" ? arg : ((arg as { text?: string } | undefined)?.text ?? "?");
  return text.replace(/\s+/g, " ").trim().slice(0, 70);
}

function timed(key: string, args: unknown[], call: (args: unknown[]) => unknown): unknown {
  const t0 = performance.now();
  const record = () => {
    const entry = statementTimes.get(key) ?? { n: 0, ms: 0 };
    entry.n += 1;
    entry.ms += performance.now() - t0;
    statementTimes.set(key, entry);
  };
  const last = args[args.length - 1];
  if (typeof last === "function") {
    const callback = last as (...a: unknown[]) => unknown;
    return call([
      ...args.slice(0, -1),
      (...a: unknown[]) => {
        record();
        return callback(...a);
      },
    ]);
  }
  const result = call(args);
  if (result && typeof (result as Promise<unknown>).then === "function") (result as Promise<unknown>).then(record, record);
  return result;
}

export function installCounters(): void {
  if (installed) return;
  installed = true;
  if (timing) loopDelay.enable();
  const clientProto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const query = clientProto.query;
  clientProto.query = function counted(this: unknown, ...args: unknown[]) {
    counts.pgQueries += 1;
    if (!timing) return query.apply(this, args);
    return timed(statementKey(args[0]), args, (a) => query.apply(this, a));
  };
  const redisProto = Redis.prototype as unknown as { sendCommand: (...args: unknown[]) => unknown };
  const sendCommand = redisProto.sendCommand;
  redisProto.sendCommand = function counted(this: unknown, ...args: unknown[]) {
    // ioredis passes a stream only when a pipeline writes its queued commands.
    if (args[1] === undefined) counts.redisCommands += 1;
    else counts.redisPipelined += 1;
    return sendCommand.apply(this, args);
  };
}

export function snapshot(): Counts {
  return { ...counts };
}

export function since(before: Counts): Counts {
  return {
    pgQueries: counts.pgQueries - before.pgQueries,
    redisCommands: counts.redisCommands - before.redisCommands,
    redisPipelined: counts.redisPipelined - before.redisPipelined,
  };
}

export function perTask(c: Counts, tasks: number): string {
  const f = (n: number) => (n / tasks).toFixed(1);
  return `pg ${f(c.pgQueries)}/task, redis ${f(c.redisCommands)}+${f(c.redisPipelined)}p/task`;
}

/** Statements by total time from send to reply; time spent waiting for a pool client is not in it. */
export function printStatementTimes(): void {
  if (!timing) return;
  const rows = [...statementTimes].sort((a, b) => b[1].ms - a[1].ms).slice(0, 15);
  console.error("\nPostgreSQL statements by total wait (AX_BENCH_PROFILE=1):");
  for (const [key, { n, ms }] of rows)
    console.error(`${String(Math.round(ms)).padStart(9)} ms ${String(n).padStart(7)}x ${(ms / n).toFixed(2).padStart(7)} ms avg  ${key}`);
  const ms = (ns: number) => (ns / 1e6).toFixed(1);
  // A reply is only seen when the event loop gets to it, so a busy loop inflates the times above.
  console.error(
    `event loop delay over the run: p50 ${ms(loopDelay.percentile(50))} ms, p99 ${ms(loopDelay.percentile(99))} ms, max ${ms(loopDelay.max)} ms`,
  );
}
