import { resolve } from "node:path";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import { drizzle as drizzlePg } from "drizzle-orm/node-postgres";
import pg from "pg";
import { openEmbedded } from "./embedded.js";
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
  /** Runs `fn` with one connection held for its whole duration (session advisory locks). */
  withSession<T>(fn: (db: Db) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export function splitSchema(url: string): { url: string; schema: string } {
  const parsed = new URL(url);
  const schemaName = parsed.searchParams.get("schema") ?? "public";
  if (!SCHEMA_NAME.test(schemaName)) {
    throw new Error(`storage URL has schema "${schemaName}": use lower-case letters, digits and _ only`);
  }
  parsed.searchParams.delete("schema");
  return { url: parsed.toString(), schema: schemaName };
}

export function openStore(options: StoreOptions = {}): Store {
  if (options.url) return openServer(options.url, options.poolSize ?? 20);
  return openEmbedded(resolve(options.dataDir ?? ".ax/data"));
}

function serverPool(url: string, max: number, options: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max, options });
  // An idle client that loses its server (restart) must not crash the process; the pool replaces it.
  pool.on("error", () => {});
  // Neither may a checked-out one (a transaction in progress): pg emits "error" on it with no
  // listener. Its query fails on its own, and the pool drops the broken client on release.
  pool.on("connect", (client) => client.on("error", () => {}));
  return pool;
}

function openServer(rawUrl: string, poolSize: number): Store {
  const { url, schema: schemaName } = splitSchema(rawUrl);
  const searchPath = `-c search_path=${schemaName}`;
  const pool = serverPool(url, poolSize, searchPath);
  const db = drizzlePg(pool, { schema }) as unknown as Db;
  let relaxedPool: pg.Pool | undefined;
  let relaxed: Db | undefined;
  return {
    db,
    kind: "pg",
    schema: schemaName,
    get relaxed() {
      relaxedPool ??= serverPool(url, Math.max(2, Math.ceil(poolSize / 4)), `${searchPath} -c synchronous_commit=off`);
      relaxed ??= drizzlePg(relaxedPool, { schema }) as unknown as Db;
      return relaxed;
    },
    async withSession(fn) {
      const client = await pool.connect();
      try {
        return await fn(drizzlePg(client, { schema }) as unknown as Db);
      } finally {
        client.release();
      }
    },
    async close() {
      await Promise.all([pool.end(), relaxedPool?.end()]);
    },
  };
}
