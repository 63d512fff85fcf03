import type { SQL } from "drizzle-orm";
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
