import { createHash } from "node:crypto";
import { DrizzleQueryError, fillPlaceholders, sql, type SQL } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import pg from "pg";
import type { Db } from "../connect.js";
import { schemaOf, toStoreError } from "../store-error.js";
import type { RunStatus, TaskStatus } from "../types.js";

/** Rows of a raw statement; node-postgres and PGlite both answer `{ rows }`. */
export async function rows<T>(db: Db, query: SQL): Promise<T[]> {
  const result = (await db.execute(query)) as unknown as { rows: T[] };
  return result.rows;
}

const dialect = new PgDialect();
/** Date and time types stay text, as drizzle answers raw statements (and PGlite does). */
const TEXT_TYPES = new Set([1082, 1083, 1114, 1115, 1182, 1184, 1185, 1186, 1187, 1231]);
const rawTypes = {
  getTypeParser: (id: number, format?: "text" | "binary") =>
    TEXT_TYPES.has(id) ? (value: string) => value : pg.types.getTypeParser(id, format ?? "text"),
} as pg.CustomTypesConfig;

/**
 * Statement names by text. A hot statement's text is one of a few variants (its parts and batch
 * size bucket), long enough that its digest cost about 13 µs a call in a profile of triggers made
 * one at a time; a text seen before costs a map lookup. Bounded in case a caller made texts
 * without end.
 */
const names = new Map<string, string>();
const MAX_NAMES = 1000;

function statementName(text: string): string {
  let name = names.get(text);
  if (name === undefined) {
    if (names.size >= MAX_NAMES) names.clear();
    name = `ax_${createHash("sha1").update(text).digest("hex").slice(0, 24)}`;
    names.set(text, name);
  }
  return name;
}

/**
 * `rows` for the statements every attempt runs (trigger, start, completion): on a node-postgres
 * pool each is a named statement, so a connection plans it once instead of on every call (its
 * CTEs cost about as much to plan as to run). The name is a digest of the text, so each batch
 * size bucket (see `recordset`) is its own statement; elsewhere (PGlite, a transaction) it is `rows`.
 */
export async function hotRows<T>(db: Db, query: SQL): Promise<T[]> {
  const client = poolOf(db);
  if (!client) return rows<T>(db, query);
  const { sql: text, params } = dialect.sqlToQuery(query);
  return named<T>(db, client, statementName(text), text, params);
}

function poolOf(db: Db): pg.Pool | undefined {
  const client = (db as unknown as { $client?: unknown }).$client;
  return client instanceof pg.Pool ? client : undefined;
}

async function named<T>(db: Db, client: pg.Pool, name: string, text: string, params: unknown[]): Promise<T[]> {
  try {
    const result = await client.query<T & pg.QueryResultRow>({ name, text, values: params, types: rawTypes });
    return result.rows;
  } catch (error) {
    // The pool bypasses drizzle here, so the translation drizzle statements get on this db is done by hand.
    throw toStoreError(new DrizzleQueryError(text, params, error as Error), schemaOf(db));
  }
}

/** A value of a shaped statement, by name: a placeholder where the text is rendered once per shape. */
export type HotValue = (name: string) => SQL;

/**
 * A hot statement whose text is a function of its shape alone (which parts it has, the size
 * buckets of its lists): `build` must read nothing else, and take every value through `v`.
 */
export interface ShapedStatement<S> {
  name: string;
  build(shape: S, v: HotValue): SQL;
}

const placeholder: HotValue = (name) => sql`${sql.placeholder(name)}`;
/** Rendered statements by name and shape; bounded like `names`. */
const rendered = new Map<string, { text: string; name: string; params: unknown[] }>();

/**
 * `hotRows` for a `ShapedStatement`: drizzle renders its text once per shape instead of on every
 * call (about 12 µs for a start of two attempts, and the lookup of its name by a 1.7 KB text
 * another 3 µs, measured in a loop before 0.25.5), and each call fills in its `values`.
 */
export async function shapedRows<T, S>(db: Db, statement: ShapedStatement<S>, shape: S, values: Record<string, unknown>): Promise<T[]> {
  const client = poolOf(db);
  if (!client)
    return rows<T>(
      db,
      statement.build(shape, (name) => sql`${values[name]}`),
    );
  const key = `${statement.name}:${JSON.stringify(shape)}`;
  let found = rendered.get(key);
  if (found === undefined) {
    if (rendered.size >= MAX_NAMES) rendered.clear();
    const { sql: text, params } = dialect.sqlToQuery(statement.build(shape, placeholder));
    found = { text, name: statementName(text), params };
    rendered.set(key, found);
  }
  return named<T>(db, client, found.name, found.text, fillPlaceholders(found.params, values));
}

/**
 * The LIMIT given to the planner for a list of `n` values: the next power of two, so that a
 * statement's text (and its prepared plan, see `hotRows`) has few variants while the estimate
 * stays within 2x.
 */
function sizeBound(n: number): string {
  return String(sizeBucket(n));
}

/** The bucket of a list of `n` values in a statement's text (see `sizeBound`): a shaped statement's shape holds it. */
export function sizeBucket(n: number): number {
  return 2 ** Math.ceil(Math.log2(Math.max(1, n)));
}

/** A JSON document as a statement parameter (also how string arrays travel: `jsonb_array_elements_text`). */
export function jsonParam(value: unknown): string {
  return JSON.stringify(value);
}

/**
 * Rows passed as one JSON parameter, as a subquery. The LIMIT bounds the row count (`sizeBound`):
 * without it the planner guesses 100 rows for `jsonb_to_recordset` and may scan a whole table
 * instead of probing its primary key.
 */
export function recordset(values: object[], columns: string): SQL {
  return recordsetOf(sql`${jsonParam(values)}`, values.length, columns);
}

/** `recordset` of a JSON value (`v("input")` in a shaped statement) holding up to `count` rows. */
export function recordsetOf(json: SQL, count: number, columns: string): SQL {
  return sql`(select * from jsonb_to_recordset(${json}::jsonb) as x(${sql.raw(columns)}) limit ${sql.raw(sizeBound(count))})`;
}

/** A list of uuids as a subquery, with a bound on its size for the planner (see `recordset`). */
export function uuidList(ids: string[]): SQL {
  return uuidListOf(sql`${jsonParam(ids)}`, ids.length);
}

/** `uuidList` of a JSON array value holding up to `count` uuids. */
export function uuidListOf(json: SQL, count: number): SQL {
  return sql`(select value::uuid from jsonb_array_elements_text(${json}::jsonb) limit ${sql.raw(sizeBound(count))})`;
}

/** The length of the longest of `lists` (at least 1). */
export function longestOf(lists: readonly (readonly string[])[]): number {
  let longest = 1;
  for (const list of lists) if (list.length > longest) longest = list.length;
  return longest;
}

/**
 * The elements of a JSON array column of each input row (`column`, e.g. a node's downstream keys),
 * as a subquery yielding `value`, bounded by `longest`, the longest list that column holds
 * (`longestOf`): unbounded, the planner expects 100 per row, and the cached plan for a one-node
 * batch then hashes a whole table instead of probing its primary key.
 */
export function elementsUpTo(column: SQL, longest: number): SQL {
  return sql`(select value from jsonb_array_elements_text(${column}) limit ${sql.raw(sizeBound(longest))})`;
}

/**
 * `column = any(values)` as a hot statement's filter on rows it finds by primary key, in a form
 * (`is true`) the planner cannot match to a partial index on that status (`node_runs_in_flight`,
 * `runs_status`). Matched, a plan cached while few rows had the status reads every such row in
 * each statement: the whole backlog of queued nodes or pending runs, or every running node of
 * the cluster. The semantics are unchanged, including the recheck of a row updated concurrently.
 */
export function statusIs(column: SQL, ...statuses: (TaskStatus | RunStatus)[]): SQL {
  return sql`(${column} in (${sql.raw(statuses.map((s) => `'${s}'`).join(", "))})) is true`;
}

/**
 * The key of an advisory lock named `name` for this installation: advisory locks are shared by
 * the whole database, and two installations in different schemas of one database (`?schema=`)
 * must not take each other's (a reconciler pass that finds the lock taken is skipped).
 */
export function lockKey(name: string): SQL {
  return sql`hashtext(current_schema() || ':' || ${name})`;
}

/** A list of strings as a subquery, with a bound on its size for the planner (see `recordset`). */
export function textList(values: string[]): SQL {
  return sql`(select value from jsonb_array_elements_text(${jsonParam(values)}::jsonb) limit ${sql.raw(sizeBound(values.length))})`;
}
