import { and, asc, desc, eq, gte, inArray, lt, sql, type SQL } from "drizzle-orm";
import type { Db } from "../connect.js";
import { attempts, flowDefinitions, nodeRuns, runs, workers } from "../schema/index.js";
import { flowVersionById, notRetired } from "./flow-definitions.js";
import { waitingFor } from "./admission.js";
import { AxBadCursorError, DEFAULT_HEARTBEAT_MS } from "@ax/common";
import type { AttemptOutcome, Json, RunStatus, RunTrigger, TaskFailure, TaskStatus } from "../types.js";

export interface AttemptInfo {
  n: number;
  worker: string;
  startedAt: string;
  finishedAt: string | null;
  outcome: AttemptOutcome | null;
  error: { name: string; message: string; stack: string | null } | null;
  /**
   * On an attempt still running whose worker process has missed two heartbeats (it renews its
   * lease every second): how long it has been silent, in whole seconds as ms, by PostgreSQL's
   * clock. Past the lease (5 s by default) the reconciler presumes it crashed, closes the attempt
   * and retries the node. Null otherwise: a finished attempt, a worker heard from lately, or one
   * whose row is gone. Whole seconds, so a live run's stream changes once a second, not per poll.
   */
  workerSilentMs: number | null;
}

export interface TaskRunInfo {
  key: string;
  task: string;
  /** The worker group (`queue` option) whose workers run it. */
  queue: string;
  /** Node keys this node takes arguments from (the DAG's edges). */
  upstream: string[];
  status: TaskStatus;
  attempts: AttemptInfo[];
  result: Json;
  /**
   * `notRetried`: on a failed node, why its last attempt was not followed by another. `notifyOnly`:
   * the node failed for good under `onFailure: "notify_only"`, so the run's outcome ignores it.
   */
  error: { name: string; message: string; stack: string | null; notRetried: string | null; notifyOnly: boolean } | null;
  progress: Json;
  nextRetryAt: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  /** A rerun's node carried over with its stored result, not executed: the run it came from. */
  reusedFrom: string | null;
  /**
   * Why a node that could start has not: its run is held ("maxConcurrentRuns 2/2"), a limit is
   * reached ("pool core_db (25/25)", "rate limit 5 per 1s", "concurrency 2/2"), or no worker
   * serves it ("no worker serves queue heavy").
   */
  waitingFor: string | null;
}

export interface RunInfo {
  id: string;
  flow: string;
  flowVersion: number;
  status: RunStatus;
  trigger: RunTrigger;
  payload: Json;
  businessKey: string | null;
  idempotencyKey: string | null;
  logicalDate: string | null;
  rerunOf: string | null;
  /** BullMQ priority of the run's jobs (1 = highest), null when none was given. */
  priority: number | null;
  /** When the run's first nodes became (or become) due, for a delayed trigger. */
  runAt: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  /** Why a `pending` run has not started: held by admission (e.g. "maxConcurrentRuns 2/2"); else null. */
  waitingFor: string | null;
  tasks: TaskRunInfo[];
}

export type RunSummary = Omit<RunInfo, "tasks" | "payload" | "waitingFor">;

export interface RunFilter {
  flow?: string | undefined;
  /** One state, or any of several (`["pending", "running"]`: the runs still in flight). */
  status?: RunStatus | readonly RunStatus[] | undefined;
  businessKey?: string | undefined;
  /** The run an idempotency key made; give `flow` too, as keys are unique per flow (and it is then an index lookup). */
  idempotencyKey?: string | undefined;
  trigger?: RunTrigger | undefined;
  /** Runs created at or after this time. */
  from?: Date | undefined;
  /** Runs created before this time. */
  to?: Date | undefined;
  /** `nextCursor` of the page before: the runs older than its last one. */
  cursor?: string | undefined;
  limit?: number | undefined;
}

export interface RunPage {
  runs: RunSummary[];
  /** Pass as `cursor` for the next (older) page; null on the last page. */
  nextCursor: string | null;
}

/**
 * A cursor holds the last run's created_at at PostgreSQL's microsecond precision (a JS Date keeps
 * milliseconds, and runs created within one millisecond would be skipped or repeated) and its id.
 */
function encodeCursor(createdAt: string, id: string): string {
  return Buffer.from(`${createdAt}|${id}`).toString("base64url");
}

const CURSOR_SHAPE =
  /^((\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.\d{6}Z)\|([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

/** The fields name a real UTC time (no 30 February, hour 24 or month 99), which PostgreSQL would refuse with a 500. */
function realTime(year: number, month: number, day: number, hour: number, minute: number, second: number): boolean {
  const at = new Date(Date.UTC(year, month - 1, day, hour, minute, second));
  return (
    at.getUTCFullYear() === year &&
    at.getUTCMonth() === month - 1 &&
    at.getUTCDate() === day &&
    at.getUTCHours() === hour &&
    at.getUTCMinutes() === minute &&
    at.getUTCSeconds() === second
  );
}

function decodeCursor(cursor: string): { at: string; id: string } {
  const match = CURSOR_SHAPE.exec(Buffer.from(cursor, "base64url").toString());
  if (!match) throw new AxBadCursorError(cursor);
  const [year, month, day, hour, minute, second] = match.slice(2, 8).map(Number) as [number, number, number, number, number, number];
  if (!realTime(year, month, day, hour, minute, second)) throw new AxBadCursorError(cursor);
  return { at: match[1]!, id: match[8]! };
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

function publicError(e: TaskFailure): { name: string; message: string; stack: string | null };
function publicError(e: TaskFailure | null): { name: string; message: string; stack: string | null } | null;
function publicError(e: TaskFailure | null) {
  return e ? { name: e.name, message: e.message, stack: e.stack } : null;
}

export async function runStatus(db: Db, id: string): Promise<RunStatus | undefined> {
  const [row] = await db.select({ status: runs.status }).from(runs).where(eq(runs.id, id));
  return row?.status;
}

/**
 * One run with every node and attempt, in DAG order; four queries whatever the run's size, read
 * from one snapshot so that nodes and attempts agree (a node `retrying` never shows the attempt
 * that started after it was read).
 */
export async function getRunInfo(db: Db, id: string): Promise<RunInfo | undefined> {
  const read = await db.transaction(
    async (tx) => {
      const [run] = await tx.select().from(runs).where(eq(runs.id, id));
      if (!run) return undefined;
      const version = await flowVersionById(tx, run.flowVersionId);
      const nodes = await tx.select().from(nodeRuns).where(eq(nodeRuns.runId, id));
      const tries = await tx.select().from(attempts).where(eq(attempts.runId, id)).orderBy(asc(attempts.n));
      const waiting = run.status === "pending" ? await waitingFor(tx, id) : null;
      const silent = await workersSilence(tx, [...new Set(tries.filter((a) => !a.finishedAt).map((a) => a.worker))]);
      return { run, version, nodes, tries, waiting, silent };
    },
    { isolationLevel: "repeatable read", accessMode: "read only" },
  );
  if (!read) return undefined;
  const { run, version, nodes, tries, silent } = read;
  // A run triggered with `delay` / `runAt` waits for its time whether or not admission holds it.
  const notDue = run.status === "pending" && run.runAt && run.runAt.getTime() > Date.now() ? `due at ${run.runAt.toISOString()}` : null;
  const waiting = read.waiting ?? notDue;
  const dagNodes = version?.dag.nodes ?? [];
  const order = new Map(dagNodes.map((n, i) => [n.key, i]));
  const upstream = new Map(dagNodes.map((n) => [n.key, n.upstream]));
  nodes.sort((a, b) => (order.get(a.nodeKey) ?? 0) - (order.get(b.nodeKey) ?? 0));
  return {
    ...summarise(run, version?.version ?? 0),
    payload: run.payload ?? null,
    waitingFor: waiting,
    tasks: nodes.map((n) => ({
      key: n.nodeKey,
      task: n.task,
      queue: n.queue,
      upstream: upstream.get(n.nodeKey) ?? [],
      status: n.status,
      attempts: tries
        .filter((a) => a.nodeKey === n.nodeKey)
        .map((a) => ({
          n: a.n,
          worker: a.worker,
          startedAt: a.startedAt.toISOString(),
          finishedAt: iso(a.finishedAt),
          outcome: a.outcome,
          error: publicError(a.error),
          workerSilentMs: a.finishedAt ? null : (silent.get(a.worker) ?? null),
        })),
      result: n.result ?? null,
      error: n.error ? { ...publicError(n.error), notRetried: n.error.notRetried ?? null, notifyOnly: n.error.notifyOnly === true } : null,
      progress: n.progress ?? null,
      nextRetryAt: iso(n.nextRetryAt),
      startedAt: iso(n.startedAt),
      finishedAt: iso(n.finishedAt),
      reusedFrom: n.reusedFrom,
      waitingFor: waiting !== null && (n.status === "pending" || n.status === "queued") && n.depsRemaining === 0 ? waiting : null,
    })),
  };
}

/**
 * The workers of attempts still running that have missed two heartbeats, and for how long (whole
 * seconds): a killed worker's attempt looks running until the reconciler's pass.
 */
async function workersSilence(tx: Db, ids: string[]): Promise<Map<string, number>> {
  if (ids.length === 0) return new Map();
  const rows = await tx
    .select({ id: workers.id, silentS: sql<number>`floor(extract(epoch from now() - ${workers.heartbeatAt}))::int` })
    .from(workers)
    .where(inArray(workers.id, ids));
  return new Map(rows.filter((r) => r.silentS * 1000 >= 2 * DEFAULT_HEARTBEAT_MS).map((r) => [r.id, r.silentS * 1000]));
}

function summarise(run: typeof runs.$inferSelect, flowVersion: number): RunSummary {
  return {
    id: run.id,
    flow: run.flow,
    flowVersion,
    status: run.status,
    trigger: run.trigger,
    businessKey: run.businessKey,
    idempotencyKey: run.idempotencyKey,
    logicalDate: iso(run.logicalDate),
    rerunOf: run.rerunOf,
    priority: run.priority,
    runAt: iso(run.runAt),
    createdAt: run.createdAt.toISOString(),
    startedAt: iso(run.startedAt),
    finishedAt: iso(run.finishedAt),
  };
}

export interface FlowOverview {
  name: string;
  version: number;
  nodes: number;
  /** Newest first. */
  recentRuns: RunSummary[];
}

/**
 * Every flow's current version and size with its `runsPerFlow` newest runs, by name: the console's
 * Flows page. Three statements whatever the number of flows; each flow's runs come off the
 * (flow, created_at) index.
 */
export async function flowOverview(db: Db, runsPerFlow: number): Promise<FlowOverview[]> {
  const latest = await db
    .selectDistinctOn([flowDefinitions.name], {
      name: flowDefinitions.name,
      version: flowDefinitions.version,
      nodes: sql<number>`jsonb_array_length(${flowDefinitions.dag}->'nodes')`,
    })
    .from(flowDefinitions)
    .where(notRetired)
    .orderBy(flowDefinitions.name, desc(flowDefinitions.registeredAt), desc(flowDefinitions.version));
  const recent =
    runsPerFlow === 0
      ? []
      : await db
          .select()
          .from(runs)
          .where(
            sql`${runs.id} in (select r.id from (select distinct name from flow_definitions where ${notRetired}) f
              cross join lateral (select id from runs where flow = f.name
                order by created_at desc nulls first, id desc nulls first limit ${runsPerFlow}) r)`,
          )
          .orderBy(desc(runs.createdAt), desc(runs.id));
  const versions = recent.length
    ? await db
        .select({ id: flowDefinitions.id, version: flowDefinitions.version })
        .from(flowDefinitions)
        .where(inArray(flowDefinitions.id, [...new Set(recent.map((r) => r.flowVersionId))]))
    : [];
  const versionOf = new Map(versions.map((v) => [v.id, v.version]));
  return latest.map((flow) => ({
    name: flow.name,
    version: flow.version,
    nodes: Number(flow.nodes),
    recentRuns: recent.filter((r) => r.flow === flow.name).map((r) => summarise(r, versionOf.get(r.flowVersionId) ?? 0)),
  }));
}

/** Newest first. */
export async function listRunSummaries(db: Db, filter: RunFilter = {}): Promise<RunSummary[]> {
  return (await listRunPage(db, filter)).runs;
}

/**
 * One page of runs, newest first, by keyset on (created_at, id): a deep page costs what the first
 * does, whatever the history's size.
 */
export async function listRunPage(db: Db, filter: RunFilter = {}): Promise<RunPage> {
  const limit = filter.limit ?? 50;
  const where: SQL[] = [];
  if (filter.flow) where.push(eq(runs.flow, filter.flow));
  if (typeof filter.status === "string") where.push(eq(runs.status, filter.status));
  else if (filter.status) where.push(inArray(runs.status, [...filter.status]));
  if (filter.businessKey) where.push(eq(runs.businessKey, filter.businessKey));
  if (filter.idempotencyKey) {
    const inFlow = filter.flow ? sql` and flow = ${filter.flow}` : sql``;
    where.push(sql`${runs.id} in (select run_id from idempotency_keys where key = ${filter.idempotencyKey}${inFlow})`);
  }
  if (filter.trigger) where.push(eq(runs.trigger, filter.trigger));
  if (filter.from) where.push(gte(runs.createdAt, filter.from));
  if (filter.to) where.push(lt(runs.createdAt, filter.to));
  if (filter.cursor) {
    const { at, id } = decodeCursor(filter.cursor);
    where.push(sql`(${runs.createdAt}, ${runs.id}) < (${at}::timestamptz, ${id}::uuid)`);
  }
  const found = await db
    .select({
      run: runs,
      exactCreatedAt: sql<string>`to_char(${runs.createdAt} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`,
    })
    .from(runs)
    .where(where.length ? and(...where) : undefined)
    .orderBy(desc(runs.createdAt), desc(runs.id))
    .limit(limit + 1);
  const page = found.slice(0, limit);
  const versions = page.length
    ? await db
        .select({ id: flowDefinitions.id, version: flowDefinitions.version })
        .from(flowDefinitions)
        .where(inArray(flowDefinitions.id, [...new Set(page.map((r) => r.run.flowVersionId))]))
    : [];
  const byId = new Map(versions.map((v) => [v.id, v.version]));
  const last = page.at(-1);
  return {
    runs: page.map((r) => summarise(r.run, byId.get(r.run.flowVersionId) ?? 0)),
    nextCursor: found.length > limit && last ? encodeCursor(last.exactCreatedAt, last.run.id) : null,
  };
}
