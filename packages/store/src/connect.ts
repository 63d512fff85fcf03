import { resolve } from "node:path";
import { AxConfigError, DEFAULT_DATA_DIR, SCHEMA_NAME, SCHEMA_NAME_RULE } from "@ax/common";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import { drizzle as drizzlePg } from "drizzle-orm/node-postgres";
import pg from "pg";
import { within } from "./deadline.js";
import { openEmbedded } from "./embedded.js";
import { connectionFailure, guardStoreErrors } from "./store-error.js";
import { listenOnServer, type Listening } from "./listen.js";
import * as schema from "./schema/index.js";

export type Schema = typeof schema;
export type Db = PgDatabase<PgQueryResultHKT, Schema>;

export interface StoreOptions {
  /**
   * `postgres://…` for a server; unset for embedded PGlite in `dataDir`.
   * A `?schema=name` parameter keeps every table in that PostgreSQL schema.
   */
  url?: string | undefined;
  /** @defaultValue `./.ax/data` (embedded mode only) */
  dataDir?: string | undefined;
  /** @defaultValue 20 (server mode only) */
  poolSize?: number | undefined;
  /**
   * Bound on every statement outside `withSession` (server mode only): PostgreSQL cancels a
   * slower one, and the client gives up on a server that does not answer at all (frozen, or cut
   * off by a network that drops packets) shortly after. @defaultValue 30000
   */
  statementTimeoutMs?: number | undefined;
}

export interface Store {
  db: Db;
  kind: "pg" | "pglite";
  /** PostgreSQL schema holding the tables; `public` unless `?schema=` was given. */
  schema: string;
  /**
   * Connections whose commits do not wait for the disk (`synchronous_commit = off`), for writes
   * whose loss in a database crash is recovered elsewhere. Opened on first use.
   */
  readonly relaxed: Db;
  /**
   * A small pool of its own for worker leases (heartbeats): a main pool busy with long
   * transactions must not make a live worker look dead. Short statements only.
   */
  readonly leases: Db;
  /** Runs `fn` with one connection held for its whole duration (session advisory locks, migrations). */
  withSession<T>(fn: (db: Db) => Promise<T>): Promise<T>;
  /**
   * LISTENs on `channel`; PostgreSQL delivers a notification once the transaction that sent it
   * commits. A server connection that drops is reopened (what was sent meanwhile is lost).
   */
  listen(channel: string, onNotify: (payload: string) => void, onError: (error: unknown) => void): Promise<Listening>;
  /**
   * Closes every connection. Clients still checked out after `timeoutMs` (a transaction held by
   * code that does not return) are cut rather than waited for. @defaultValue 5000
   */
  close(timeoutMs?: number): Promise<void>;
}

export function splitSchema(url: string): { url: string; schema: string } {
  const parsed = new URL(url);
  const given = parsed.searchParams.getAll("schema");
  // Two would silently mean the first: a history the user may not have meant.
  if (given.length > 1) throw new AxConfigError(`storage URL names ${given.length} schemas (${given.join(", ")}): give ?schema= once`);
  const schemaName = given[0] ?? "public";
  if (!SCHEMA_NAME.test(schemaName)) {
    throw new AxConfigError(`storage URL has schema "${schemaName}": ${SCHEMA_NAME_RULE}`);
  }
  parsed.searchParams.delete("schema");
  return { url: parsed.toString(), schema: schemaName };
}

export function openStore(options: StoreOptions = {}): Store {
  if (options.url) return openServer(options.url, options.poolSize ?? 20, options.statementTimeoutMs ?? STATEMENT_TIMEOUT_MS);
  return openEmbedded(resolve(options.dataDir ?? DEFAULT_DATA_DIR));
}

/** Waiting longer than this for a connection means PostgreSQL is unreachable: the caller's retry decides. */
const CONNECT_TIMEOUT_MS = 5000;

const STATEMENT_TIMEOUT_MS = 30_000;
/** The client's bound past the server's: a slow statement gets PostgreSQL's own cancel first. */
const CLIENT_MARGIN_MS = 2000;

/**
 * Server-side settings per pool (`-c` startup options). The leases pool runs short statements
 * only, so anything slow there is a stuck server, not work; the other two are bounded by the
 * store's statement timeout, which `withSession` (migrations, pruning) does without.
 */
const POOL_SETTINGS = {
  main: "-c random_page_cost=1.1",
  relaxed: "-c random_page_cost=1.1 -c synchronous_commit=off -c idle_in_transaction_session_timeout=60s",
  leases: "-c statement_timeout=5s -c idle_in_transaction_session_timeout=5s",
} as const;
const LEASES_QUERY_TIMEOUT_MS = 10_000;

interface ServerPool {
  pool: pg.Pool;
  db: Db;
  close(timeoutMs: number): Promise<void>;
}

/** The first re-plan after a connection opens; each later one waits twice as long, up to the cap. */
const FIRST_REPLAN_MS = 1000;
const MAX_REPLAN_MS = 5 * 60_000;

/**
 * Prepared statements (see `hotRows`) keep the plan PostgreSQL chose when they were first run
 * a few times. Chosen on a fresh schema, that plan scans whole tables, which are tiny then; it
 * stays until an ANALYZE invalidates it, and without autovacuum (or between its passes, in a
 * burst) it makes every completion cost as much as the history is long. So each connection
 * drops its cached plans (`DISCARD PLANS`: the statements stay prepared) after 1 s, 2 s, 4 s...
 * and every 5 minutes from then on; the planner then sees the tables at their current size.
 */
function replanAsTablesGrow(pool: pg.Pool): void {
  const due = new WeakMap<pg.PoolClient, { at: number; gap: number }>();
  pool.on("connect", (client) => due.set(client, { at: Date.now() + FIRST_REPLAN_MS, gap: FIRST_REPLAN_MS }));
  pool.on("acquire", (client) => {
    const next = due.get(client);
    if (!next || Date.now() < next.at) return;
    next.gap = Math.min(next.gap * 2, MAX_REPLAN_MS);
    next.at = Date.now() + next.gap;
    // Queued on this client ahead of the caller's statement; a failure leaves the old plans, no harm.
    client.query("discard plans").catch(() => {});
  });
}

function serverPool(url: string, schemaName: string, max: number, options: string, queryTimeoutMs: number): ServerPool {
  // Without a client-side bound, a server that stops answering (SIGSTOP, a partition that drops
  // packets) holds every statement on a warm connection, and every API request, until it is back.
  const pool = new pg.Pool({
    connectionString: url,
    max,
    options,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    query_timeout: queryTimeoutMs,
  });
  const clients = new Set<pg.PoolClient>();
  // An idle client that loses its server (restart) must not crash the process; the pool replaces it.
  pool.on("error", () => {});
  pool.on("connect", (client) => {
    clients.add(client);
    // Neither may a checked-out one (a transaction in progress): pg emits "error" on it with no
    // listener. Its query fails on its own, and the pool drops the broken client on release.
    client.on("error", () => {});
  });
  pool.on("remove", (client) => clients.delete(client));
  replanAsTablesGrow(pool);
  return {
    pool,
    db: guardStoreErrors(drizzlePg(pool, { schema }) as unknown as Db, schemaName),
    async close(timeoutMs) {
      // end() waits for every checked-out client to be released, which code stuck in a
      // transaction never does: past the deadline its connection is cut and its next query fails.
      const ended = await within(pool.end(), timeoutMs);
      if (ended.done) return;
      for (const client of clients) void client.end().catch(() => {});
    },
  };
}

function openServer(rawUrl: string, poolSize: number, statementTimeoutMs: number): Store {
  const { url, schema: schemaName } = splitSchema(rawUrl);
  const searchPath = `-c search_path=${schemaName}`;
  const bounded = `-c statement_timeout=${statementTimeoutMs}`;
  const queryTimeout = statementTimeoutMs + CLIENT_MARGIN_MS;
  const main = serverPool(url, schemaName, poolSize, `${searchPath} ${bounded} ${POOL_SETTINGS.main}`, queryTimeout);
  const leases = serverPool(url, schemaName, 2, `${searchPath} ${POOL_SETTINGS.leases}`, LEASES_QUERY_TIMEOUT_MS);
  let relaxed: ServerPool | undefined;
  const sessions = new Map<pg.Client, Promise<unknown>>();
  return {
    db: main.db,
    kind: "pg",
    schema: schemaName,
    get relaxed() {
      const size = Math.max(4, Math.ceil(poolSize / 2));
      relaxed ??= serverPool(url, schemaName, size, `${searchPath} ${bounded} ${POOL_SETTINGS.relaxed}`, queryTimeout);
      return relaxed.db;
    },
    leases: leases.db,
    async withSession(fn) {
      // A connection of its own, unbounded: migrations and pruning may take long on a large history.
      const client = new pg.Client({
        connectionString: url,
        options: `${searchPath} ${POOL_SETTINGS.main}`,
        connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      });
      client.on("error", () => {});
      try {
        await client.connect();
      } catch (error) {
        throw connectionFailure(error, schemaName);
      }
      const work = fn(guardStoreErrors(drizzlePg(client, { schema }) as unknown as Db, schemaName));
      sessions.set(client, work);
      try {
        return await work;
      } finally {
        sessions.delete(client);
        await client.end().catch(() => {});
      }
    },
    listen: (channel, onNotify, onError) => listenOnServer(url, channel, onNotify, onError),
    async close(timeoutMs = 5000) {
      const sessionsDone = within(Promise.allSettled(sessions.values()), timeoutMs).then(() => {
        for (const client of sessions.keys()) void client.end().catch(() => {});
      });
      await Promise.all([main.close(timeoutMs), leases.close(timeoutMs), relaxed?.close(timeoutMs), sessionsDone]);
    },
  };
}
