import { createRequire } from "node:module";

// Global setup runs in vitest's main process, which resolves packages from the repository's root,
// where pg is not a dependency: taken from the test package's own dependencies instead.
const pg = createRequire(import.meta.url)("pg") as typeof import("pg");
const PG_URL = process.env.AX_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

/**
 * Every test file creates a schema of some 30 tables and drops it. On a server with autovacuum off
 * (as on the development machine) the system catalogs keep every dropped row: after a few full
 * runs pg_attribute held 285,000 dead rows against 3,000 live ones, and each later schema was
 * slower to create, read and drop. Vacuumed before and after the run, so a run leaves none behind.
 */
const CATALOGS = [
  "pg_attribute",
  "pg_depend",
  "pg_class",
  "pg_index",
  "pg_type",
  "pg_constraint",
  "pg_attrdef",
  "pg_sequence",
  "pg_namespace",
];

async function vacuumCatalogs(): Promise<void> {
  const client = new pg.Client({ connectionString: PG_URL });
  try {
    await client.connect();
    // A role that may not vacuum a catalog gets a warning, not an error: the run goes on as before.
    await client.query(`vacuum ${CATALOGS.map((name) => `pg_catalog.${name}`).join(", ")}`);
  } catch {
    // No vacuum is no failure: the tests only run slower.
  } finally {
    await client.end().catch(() => undefined);
  }
}

export async function setup(): Promise<void> {
  await vacuumCatalogs();
}

export async function teardown(): Promise<void> {
  await vacuumCatalogs();
}
