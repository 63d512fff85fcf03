import { and, asc, eq, inArray, sql, type SQL } from "drizzle-orm";
import type { Db } from "../connect.js";
import { attempts, flowDefinitions, nodeRuns, runs } from "../schema/index.js";
import { flowVersionById } from "./flow-definitions.js";
import { waitingFor } from "./admission.js";
import type { AttemptOutcome, Json, RunStatus, RunTrigger, TaskStatus } from "../types.js";

export interface AttemptInfo {
  n: number;
  worker: string;
  startedAt: string;
  finishedAt: string | null;
  outcome: AttemptOutcome | null;
  error: { name: string; message: string; stack: string | null } | null;
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
  error: { name: string; message: string; stack: string | null } | null;
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
  status?: RunStatus | undefined;
  businessKey?: string | undefined;
  limit?: number | undefined;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

function publicError(e: { name: string; message: string; stack: string | null } | null) {
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
      return { run, version, nodes, tries, waiting };
    },
    { isolationLevel: "repeatable read", accessMode: "read only" },
  );
  if (!read) return undefined;
  const { run, version, nodes, tries, waiting } = read;
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
        })),
      result: n.result ?? null,
      error: publicError(n.error),
      progress: n.progress ?? null,
      nextRetryAt: iso(n.nextRetryAt),
      startedAt: iso(n.startedAt),
      finishedAt: iso(n.finishedAt),
      reusedFrom: n.reusedFrom,
      waitingFor: waiting !== null && n.status === "pending" && n.depsRemaining === 0 ? waiting : null,
    })),
  };
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

/** Newest first. */
export async function listRunSummaries(db: Db, filter: RunFilter = {}): Promise<RunSummary[]> {
  const where: SQL[] = [];
  if (filter.flow) where.push(eq(runs.flow, filter.flow));
  if (filter.status) where.push(eq(runs.status, filter.status));
  if (filter.businessKey) where.push(eq(runs.businessKey, filter.businessKey));
  const found = await db
    .select()
    .from(runs)
    .where(where.length ? and(...where) : undefined)
    // NULLS LAST, as the indexes are built: a plain DESC (nulls first) could not read them in order.
    .orderBy(sql`${runs.createdAt} desc nulls last`)
    .limit(filter.limit ?? 50);
  const versions = found.length
    ? await db
        .select({ id: flowDefinitions.id, version: flowDefinitions.version })
        .from(flowDefinitions)
        .where(inArray(flowDefinitions.id, [...new Set(found.map((r) => r.flowVersionId))]))
    : [];
  const byId = new Map(versions.map((v) => [v.id, v.version]));
  return found.map((r) => summarise(r, byId.get(r.flowVersionId) ?? 0));
}
