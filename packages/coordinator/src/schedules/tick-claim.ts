import {
  admitHeldRuns,
  createRuns,
  within,
  currentFlowVersion,
  scheduleTx,
  type Db,
  type ReadyNode,
  type StoredSchedule,
  type TickStatus,
} from "@ax/store";
import type { Logger } from "pino";
import { cancelRun } from "../cancel.js";
import { flowAdmitsRuns } from "../flow-caps.js";
import type { BatchedEnqueue } from "../enqueue.js";
import type { QueueRegistry } from "../queues.js";
import { decideOverlap } from "./overlap.js";
import { AxScheduledRunError, newRunId } from "@ax/common";

export interface TickDeps {
  db: Db;
  queues: QueueRegistry;
  jobs: BatchedEnqueue;
  log: Logger;
}

export type TickOutcome =
  /**
   * Another coordinator recorded this tick, or the schedule is paused or gone, or (`changed`) the
   * stored cron is no longer the one this tick came from: nothing done here.
   */
  | { status: "taken" | "paused" | "unscheduled" | "changed" }
  | { status: TickStatus; runId: string | null; reason: string | null; createdAt: Date };

/** The schedule a tick was computed from. */
export type TickSource = Pick<StoredSchedule, "flow" | "cron" | "timezone">;

interface ScheduledRun {
  runId: string;
  ready: ReadyNode[];
  /** Written held (the flow has maxConcurrentRuns): admission releases it after the commit. */
  held: boolean;
}

async function createScheduledRun(tx: Db, flow: string, logicalDate: Date): Promise<ScheduledRun> {
  const version = await currentFlowVersion(tx, flow);
  if (!version) throw new AxScheduledRunError(flow, logicalDate, "the flow has no stored version; start a coordinator that defines it");
  const held = await flowAdmitsRuns(tx, flow);
  const run = { id: newRunId(), flow: version, trigger: "schedule" as const, payload: null, logicalDate };
  const [created] = await createRuns(tx, [held ? { ...run, held: {} } : run]);
  if (!created?.created) throw new AxScheduledRunError(flow, logicalDate, "the run was not written; the tick is retried");
  return { runId: created.runId, ready: created.ready, held };
}

/** The tick `overlap: queue` buffered, now that no earlier run is unfinished; in the caller's transaction. */
async function releaseWaiting(tx: Db, flow: string): Promise<ScheduledRun | undefined> {
  const waiting = await scheduleTx.waitingTick(tx, flow);
  if (!waiting || (await scheduleTx.unfinishedRuns(tx, flow)).length > 0) return undefined;
  const backfilled = await scheduleTx.backfillRunOf(tx, flow, waiting);
  if (backfilled) {
    await scheduleTx.attachRun(tx, flow, waiting, backfilled);
    return undefined;
  }
  const run = await createScheduledRun(tx, flow, waiting);
  await scheduleTx.attachRun(tx, flow, waiting, run.runId);
  return run;
}

interface Decided {
  status: TickStatus;
  reason: string | null;
  run: ScheduledRun | undefined;
  /** A buffered tick this tick found free to start. */
  released: ScheduledRun | undefined;
  cancel: string[];
  /** The backfill's run this tick is, when a backfill ran its logical date first. */
  existing?: string | undefined;
}

/** Nothing waits on a tick's jobs or cancels, but the next flow's tick waits on this one: a short wait keeps the loop on time while Redis is away. */
const TICK_DISPATCH_WAIT_MS = 250;

const BACKFILLED = "a backfill ran this logical date";

/**
 * Records one tick of a flow's schedule and acts on it, exactly once cluster-wide: the tick row
 * is unique per (flow, logical date) and written in the same transaction as its run, under a
 * per-flow lock so overlap decisions about one flow never interleave. The run's jobs are added
 * after the commit; earlier runs `cancel_previous` ends are cancelled before that.
 *
 * The tick must come from the schedule as stored now: in a rolling deploy a coordinator still on
 * the old code would otherwise keep firing the old cron beside the new one. Its overlap is the
 * stored one too.
 */
export async function claimTick(deps: TickDeps, source: TickSource, logicalDate: Date): Promise<TickOutcome> {
  const { flow } = source;
  const decided = await deps.db.transaction(async (tx): Promise<Decided | { status: "taken" | "paused" | "unscheduled" | "changed" }> => {
    await scheduleTx.lockFlow(tx, flow);
    const stored = await scheduleTx.current(tx, flow);
    if (!stored) return { status: "unscheduled" };
    // A tick dated before the last resume fell while the schedule was paused (or before): a
    // coordinator that was frozen meanwhile must not run it on waking.
    if (stored.paused || (stored.resumedAt && logicalDate < stored.resumedAt)) return { status: "paused" };
    if (stored.cron !== source.cron || stored.timezone !== source.timezone) return { status: "changed" };
    const { overlap } = stored;
    if (await scheduleTx.tickExists(tx, flow, logicalDate)) return { status: "taken" };
    // A backfill ran this logical date already: the tick is that run, not a second one.
    const backfilled = await scheduleTx.backfillRunOf(tx, flow, logicalDate);
    if (backfilled) {
      await scheduleTx.insertTick(tx, { flow, logicalDate, status: "created", reason: BACKFILLED, runId: backfilled });
      return { status: "created", reason: BACKFILLED, released: undefined, cancel: [], run: undefined, existing: backfilled };
    }
    const released = overlap === "queue" ? await releaseWaiting(tx, flow) : undefined;
    const unfinished = await scheduleTx.unfinishedRuns(tx, flow);
    const waiting = overlap === "queue" ? await scheduleTx.waitingTick(tx, flow) : undefined;
    const decision = decideOverlap(overlap, unfinished, waiting);
    if (decision.status !== "created") {
      await scheduleTx.insertTick(tx, { flow, logicalDate, status: decision.status, reason: decision.reason, runId: null });
      return { status: decision.status, reason: decision.reason, released, cancel: [], run: undefined };
    }
    const run = await createScheduledRun(tx, flow, logicalDate);
    await scheduleTx.insertTick(tx, { flow, logicalDate, status: "created", reason: null, runId: run.runId });
    return { status: "created", reason: null, released, cancel: decision.cancel, run };
  });
  if (!("run" in decided)) return decided;
  if (decided.status === "skipped") {
    deps.queues.events.publish({
      name: "schedule_skipped",
      runId: "",
      flow,
      businessKey: null,
      logicalDate: logicalDate.toISOString(),
      reason: decided.reason ?? "",
    });
  }
  const createdAt = new Date();
  // A cancel's Redis half waits up to 5 s for an unreachable Redis: the loop does not wait that long.
  const why = `by the schedule's tick of ${logicalDate.toISOString()}, overlap: cancel_previous`;
  await within(Promise.all(decided.cancel.map((runId) => cancelPrevious(deps, flow, runId, why))), TICK_DISPATCH_WAIT_MS);
  // The tick and its run are committed: a Redis outage must not hold the schedule loop (the
  // ticks due meanwhile would be missed), so the jobs are added when Redis is back, or by the reconciler.
  await deps.jobs.dispatch(await readyOf(deps, flow, [decided.released, decided.run]), TICK_DISPATCH_WAIT_MS);
  if (decided.cancel.length > 0)
    deps.log.info({ flow, cancelled: decided.cancel }, "schedule tick cancelled the earlier run(s) (overlap: cancel_previous)");
  return { status: decided.status, runId: decided.run?.runId ?? decided.existing ?? null, reason: decided.reason, createdAt };
}

/** Starts the run of the tick buffered by `overlap: queue` once the earlier run has ended; its run id, if started. */
export async function releaseQueuedTick(deps: TickDeps, flow: string): Promise<string | undefined> {
  const run = await deps.db.transaction(async (tx) => {
    await scheduleTx.lockFlow(tx, flow);
    return releaseWaiting(tx, flow);
  });
  if (!run) return undefined;
  await deps.jobs.dispatch(await readyOf(deps, flow, [run]), TICK_DISPATCH_WAIT_MS);
  return run.runId;
}

/**
 * Cancels a run `overlap: cancel_previous` ends. Its Redis half failing (Redis down) is only
 * logged: the run is cancelled in PostgreSQL, its attempts' results are dropped by the fences, and
 * throwing would fail a tick that is already committed.
 */
async function cancelPrevious(deps: TickDeps, flow: string, runId: string, why: string): Promise<void> {
  await cancelRun(deps, runId, why).catch((error: unknown) => {
    deps.log.warn(
      { err: error, flow, runId },
      "overlap cancel_previous could not cancel the earlier run in full; run `ax cancel <run>` once storage answers",
    );
  });
}

/** The jobs to add for runs just committed: their first nodes, or what admission releases for a capped flow. */
async function readyOf(deps: TickDeps, flow: string, runs: (ScheduledRun | undefined)[]): Promise<ReadyNode[]> {
  const made = runs.filter((r): r is ScheduledRun => r !== undefined);
  if (made.some((r) => r.held)) return (await admitHeldRuns(deps.db, flow)).ready;
  return made.flatMap((r) => r.ready);
}
