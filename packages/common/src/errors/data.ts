/** Errors of data crossing into PostgreSQL: payloads, results, refused statements, the embedded directory. */

const JSON_ONLY = "Pass only objects, arrays, strings, finite numbers, booleans and null.";

/**
 * Who holds an embedded data directory, as its lock file says. PGlite is one process per data
 * directory: a second one opening it crashes inside WebAssembly.
 */
export interface DataDirHolder {
  pid: number;
  hostname: string;
  startedAt: string;
  /** The holder's HTTP API (`ax dev`), through which other processes can reach the same history. */
  api?: string | undefined;
}

/** Why a value cannot travel as JSON or be stored as jsonb: names the path of the first bad part. */
export class AxNotJsonError extends Error {
  override name = "AxNotJsonError";
  constructor(
    readonly what: string,
    readonly path: string,
    readonly problem: string,
    readonly advice = JSON_ONLY,
    readonly verdict = "is not plain JSON",
  ) {
    super(`${what} ${verdict}: ${path} ${problem}. ${advice}`);
  }
}

/**
 * A trigger payload ax cannot store: not plain JSON, or a string PostgreSQL refuses (NUL, a lone
 * surrogate). Names the JSON path; an AxNotJsonError, so callers catching that still see it.
 */
export class AxPayloadError extends AxNotJsonError {
  override name = "AxPayloadError";
  constructor(refused: AxNotJsonError) {
    super(refused.what, refused.path, refused.problem, refused.advice, refused.verdict);
  }
}

/**
 * A statement PostgreSQL refused or could not run, carrying only PostgreSQL's own words. Drizzle's
 * error quotes the whole query and its parameters, which for a group-committed batch are every
 * caller's data; that text must never reach another caller, a stored error or an HTTP answer.
 */
export class AxStoreError extends Error {
  override name = "AxStoreError";
  /** SQLSTATE (e.g. `22P05`) or the driver's error code (e.g. `ECONNREFUSED`). */
  readonly code: string | undefined;
  /** PostgreSQL could not be reached (down, restarting, the connection lost): no statement was refused, a retry later may pass. */
  readonly unreachable: boolean;

  constructor(driverError: unknown) {
    const code = (driverError as { code?: unknown } | undefined)?.code;
    const reason = driverError instanceof Error ? driverError.message : "the statement failed";
    const shownCode = typeof code === "string" ? code : undefined;
    const coded = `${reason}${shownCode ? ` (${/^[0-9A-Z]{5}$/.test(shownCode) ? "SQLSTATE " : ""}${shownCode})` : ""}`;
    super(storeProblem(coded, shownCode, reason), { cause: driverError });
    this.code = shownCode;
    this.unreachable = isUnreachable(shownCode, reason);
  }
}

const WHERE = "--storage / DATABASE_URL (the Runtime's or Client's storage option)";

/** The connection never worked, or was lost: no statement was refused. */
const UNREACHABLE_CODES = /^(ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|57P0[123]|08...)$/;
const UNREACHABLE_MESSAGE = /^(Connection terminated|timeout exceeded when trying to connect|Query read timeout)/;

function isUnreachable(code: string | undefined, reason: string): boolean {
  return (code !== undefined && UNREACHABLE_CODES.test(code)) || UNREACHABLE_MESSAGE.test(reason);
}

/** What went wrong, and for a connection that failed, what to check. */
function storeProblem(coded: string, code: string | undefined, reason: string): string {
  if (code === "3D000") return `PostgreSQL has no such database: ${coded}. Create it, or fix the database name in ${WHERE}.`;
  if (code === "28000" || code === "28P01") {
    return `PostgreSQL refuses the user or password: ${coded}. Fix them in --storage / DATABASE_URL (postgres://user:password@host:5432/db, with @ : / in a password percent-encoded; the Runtime's or Client's storage option), or create that role.`;
  }
  if (/does not support SSL connections/.test(reason)) {
    return `PostgreSQL does not accept TLS connections: ${coded}. Drop sslmode (and ssl) from ${WHERE}, or enable ssl on the server.`;
  }
  if (code === "57014") {
    return `PostgreSQL cancelled the statement: ${coded}. ax bounds each of its statements at 30 s (migrations and pruning aside), so PostgreSQL is overloaded or the statement waited on a lock (pg_stat_activity shows which), unless an administrator cancelled it; a retry later may pass.`;
  }
  if (reason === "Query read timeout") {
    return `PostgreSQL did not answer a statement in time (${reason}): the server is stopped, overloaded or cut off by the network. Check that it is running and answering, and that ${WHERE} points at it.`;
  }
  if (isUnreachable(code, reason)) {
    return `could not reach PostgreSQL: ${coded}. Check that it is running and that ${WHERE} points at it.`;
  }
  return `PostgreSQL refused the statement: ${coded}`;
}

/** A call on a `Client` (or a Runtime's store) after `close()` released its connections. */
export class AxClosedError extends Error {
  override name = "AxClosedError";
  constructor() {
    super(
      "this Client's connections were released (its close(), or the stop() of the Runtime it came from). Create a new Client (or keep this one open) to go on",
    );
  }
}

/**
 * PostgreSQL answered "undefined table" or "undefined column" for one of ax's own tables: the
 * schema was never migrated, or holds an older version of them. Says only which schema and
 * PostgreSQL's own reason, never the statement or its parameters.
 */
export class AxSchemaNotMigratedError extends Error {
  override name = "AxSchemaNotMigratedError";
  constructor(
    readonly schema: string,
    /** SQLSTATE 42P01 (undefined table) or 42703 (undefined column). */
    readonly code: string,
    driverError: unknown,
  ) {
    const reason = driverError instanceof Error ? ` (${driverError.message})` : "";
    super(
      `the database schema "${schema}" has no ax tables, or is older than this version of ax${reason}: ` +
        "check the schema name in the URL (?schema=…) first: a typo names a new, empty history; for a new or older one, " +
        "run `ax migrate --storage <url>` or start a Runtime on it, which migrates",
      { cause: driverError },
    );
  }
}

/** A second process opened an embedded data directory that a live one holds. */
export class AxDataDirLockedError extends Error {
  override name = "AxDataDirLockedError";
  constructor(
    readonly dataDir: string,
    readonly holder: DataDirHolder,
    readonly lockFile: string,
  ) {
    super(
      `the embedded database in ${dataDir} is in use by process ${holder.pid} on ${holder.hostname} (since ${holder.startedAt})` +
        (holder.api ? `, which serves it at ${holder.api}` : "") +
        `. Embedded PGlite allows one process per data directory: stop that process, reach it through its HTTP API,` +
        ` or set DATABASE_URL / --storage to a PostgreSQL server so that several processes share the history.` +
        ` While \`ax dev\` (or a Runtime with the api role) holds the directory, the ax CLI goes through its API for trigger, runs, run, cancel, logs, rerun,` +
        ` backfill, backfills, schedules, schedule pause|resume, flow retire, queues, config, audit and alerts; prune and token` +
        ` work on the directory itself and need that process stopped (tokens are also served by its HTTP API).` +
        ` If that process is gone, delete ${lockFile}.`,
    );
  }
}

/**
 * A Client or a CLI command without a PostgreSQL URL found no embedded data directory where it
 * looked: opening it would create an empty history and answer as if the real one were lost.
 */
export class AxNoEmbeddedHistoryError extends Error {
  override name = "AxNoEmbeddedHistoryError";
  constructor(readonly dataDir: string) {
    super(
      `no embedded history in ${dataDir} (the directory does not exist; nothing was created). ` +
        "Without a PostgreSQL URL (Client option storage, --storage, DATABASE_URL), ax keeps its history in .ax/data under the " +
        "directory its Runtime or `ax dev` ran in: run there, pass that directory (Client option dataDir, --data-dir), " +
        "or a postgres:// URL for a cluster's history. To start an empty embedded history here, run `ax migrate` (or start a Runtime) first.",
    );
  }
}
