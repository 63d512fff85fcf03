import { sql, type SQL } from "drizzle-orm";
import type { Db } from "../connect.js";

/** Rows of a raw statement; node-postgres and PGlite both answer `{ rows }`. */
export async function rows<T>(db: Db, query: SQL): Promise<T[]> {
  const result = (await db.execute(query)) as unknown as { rows: T[] };
  return result.rows;
}

/** A JSON document as a statement parameter (also how string arrays travel: `jsonb_array_elements_text`). */
export function jsonParam(value: unknown): string {
  return JSON.stringify(value);
}

/**
 * Rows passed as one JSON parameter, as a subquery. The LIMIT is the exact row count: without it
 * the planner guesses 100 rows for `jsonb_to_recordset` and may scan a whole table instead of
 * probing its primary key.
 */
export function recordset(values: object[], columns: string): SQL {
  return sql`(select * from jsonb_to_recordset(${jsonParam(values)}::jsonb) as x(${sql.raw(columns)}) limit ${sql.raw(String(values.length))})`;
}

/** A list of uuids as a subquery, with its exact size for the planner (see `recordset`). */
export function uuidList(ids: string[]): SQL {
  return sql`(select value::uuid from jsonb_array_elements_text(${jsonParam(ids)}::jsonb) limit ${sql.raw(String(ids.length))})`;
}

/** A list of strings as a subquery, with its exact size for the planner (see `recordset`). */
export function textList(values: string[]): SQL {
  return sql`(select value from jsonb_array_elements_text(${jsonParam(values)}::jsonb) limit ${sql.raw(String(values.length))})`;
}
