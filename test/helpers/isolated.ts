import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import pg from "pg";

export const PG_URL = process.env.AX_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
export const REDIS_URL = process.env.AX_TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

/** One test's private corner of the real PostgreSQL and Redis. */
export interface Isolated {
  /** PostgreSQL URL whose `?schema=` keeps every table in this test's own schema. */
  storage: string;
  redis: string;
  /** Redis key prefix of this test's queues. */
  prefix: string;
  schema: string;
  /** A plain pg client on this test's schema, for side-effect tables and assertions. */
  sql<T extends pg.QueryResultRow = Record<string, unknown>>(text: string, values?: unknown[]): Promise<T[]>;
  /** Drops the schema and every Redis key under the prefix. */
  cleanup(): Promise<void>;
}

export function isolate(label = "t"): Isolated {
  const id = `${label}_${randomBytes(5).toString("hex")}`.toLowerCase();
  const schema = `ax_${id}`;
  const pool = new pg.Pool({ connectionString: PG_URL, max: 3, options: `-c search_path=${schema}` });
  pool.on("error", () => {});
  let created: Promise<void> | undefined;
  const ensureSchema = () => (created ??= pool.query(`create schema if not exists "${schema}"`).then(() => undefined));
  return {
    storage: `${PG_URL}?schema=${schema}`,
    redis: REDIS_URL,
    prefix: `axt_${id}`,
    schema,
    async sql(text, values) {
      await ensureSchema();
      return (await pool.query(text, values as unknown[])).rows;
    },
    async cleanup() {
      const redis = new Redis(REDIS_URL);
      try {
        let cursor = "0";
        do {
          const [next, keys] = await redis.scan(cursor, "MATCH", `axt_${id}:*`, "COUNT", 1000);
          cursor = next;
          if (keys.length) await redis.del(...keys);
        } while (cursor !== "0");
      } finally {
        redis.disconnect();
      }
      await pool.query(`drop schema if exists "${schema}" cascade`);
      await pool.end();
    },
  };
}
