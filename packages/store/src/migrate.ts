import { fileURLToPath } from "node:url";
import { sql } from "drizzle-orm";
import { migrate as migratePg } from "drizzle-orm/node-postgres/migrator";
import { migrate as migratePglite } from "drizzle-orm/pglite/migrator";
import type { NodePgDatabase } from "drizzle-orm/node-postgres";
import type { PgliteDatabase } from "drizzle-orm/pglite";
import type { Store } from "./connect.js";
import { connectionFailure } from "./store-error.js";
import { rows } from "./repositories/raw.js";

const migrationsFolder = fileURLToPath(new URL("../migrations", import.meta.url));

/**
 * Arbitrary constant, the first half of the advisory lock that serialises concurrent `migrate()`
 * calls on one schema from many processes; the schema's hash is the second half, so that schemas
 * sharing a database (tenants, tests) do not wait on each other's migrations.
 */
const MIGRATION_LOCK = 7_314_001;

/** What a process says when `migrate` created its history: most often a mistyped schema name. */
export const NEW_SCHEMA =
  "this PostgreSQL schema had no ax history, so a new, empty one was created in it. If you meant an existing history, check the schema name in the storage URL (?schema=…): a typo names a new one.";

/**
 * Applies the checked-in drizzle-kit migrations; safe to call from many processes at once. Returns
 * whether the PostgreSQL schema had no ax history before (a new one was created): a typo in
 * `?schema=` names a new, empty history, which its caller should say. Embedded storage: false.
 */
export async function migrate(store: Store): Promise<{ created: boolean }> {
  const config = { migrationsFolder, migrationsSchema: store.schema === "public" ? "drizzle" : store.schema };
  if (store.kind === "pglite") {
    await migratePglite(store.db as unknown as PgliteDatabase, config);
    return { created: false };
  }
  try {
    return await store.withSession(async (db) => {
      await db.execute(sql`select pg_advisory_lock(${MIGRATION_LOCK}, hashtext(${store.schema}))`);
      try {
        const [found] = await rows<{ created: boolean }>(
          db,
          sql`select to_regclass(format('%I.runs', ${store.schema}::text)) is null as created`,
        );
        await db.execute(sql.raw(`create schema if not exists "${store.schema}"`));
        await migratePg(db as unknown as NodePgDatabase, config);
        return { created: found?.created === true };
      } finally {
        await db.execute(sql`select pg_advisory_unlock(${MIGRATION_LOCK}, hashtext(${store.schema}))`);
      }
    });
  } catch (error) {
    // The first statement of a starting process: an unreachable server is said as such.
    throw connectionFailure(error, store.schema);
  }
}
