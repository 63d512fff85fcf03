import { randomUUID } from "node:crypto";
import {
  backfillInfo,
  cancelBackfillRecords,
  createBackfill,
  flowSettings,
  currentFlowVersion,
  unknownFlowError,
  retryableBackfillRuns,
} from "@ax/store";
import { admitFlow, type AdmissionDeps } from "../admission.js";
import { dispatchCommitted } from "../enqueue.js";
import { cancelRun } from "../cancel.js";
import { rerunRun, type RerunDeps } from "../rerun.js";
import {
  AxBackfillCancelledError,
  AxBackfillNotFoundError,
  AxCancelledError,
  AxBackfillRangeError,
  AxNoScheduleError,
  AxNoTicksError,
  AxTooManyTicksError,
  newRunId,
} from "@ax/common";
import { scheduleTicks, type Schedule } from "./ticks.js";

/** Runs at once when neither the call nor the flow says. */
export const DEFAULT_BACKFILL_CONCURRENCY = 10;
/** A backfill larger than this must be asked for explicitly (`maxTicks`). */
export const DEFAULT_MAX_BACKFILL_TICKS = 100_000;
/**
 * No backfill may be larger: listing its ticks takes croner tens of µs each (half a minute for a
 * million, in slices that leave the event loop free), and each tick is a run row.
 */
export const MAX_BACKFILL_TICKS = 1_000_000;

export interface BackfillRequest {
  flow: string;
  from: Date;
  to: Date;
  /** @defaultValue the flow's maxConcurrentRuns, else 10 */
  maxConcurrentRuns?: number | undefined;
  /** Refuse (AxTooManyTicksError) when the range has more ticks; at most 1,000,000. @defaultValue 100000 */
  maxTicks?: number | undefined;
  /** The flow's schedule as the caller knows it, used when no Runtime has stored one. */
  schedule?: Schedule | undefined;
}

export interface BackfillStarted {
  backfillId: string;
  /** Ticks in [from, to) up to now: later ones are left to the schedule. */
  ticks: number;
  /** Runs created now; ticks that already had a backfill run keep it. */
  created: number;
  /** Runs of it at once now: its own cap, or the flow's `maxConcurrentRuns` when that is smaller. */
  maxConcurrentRuns: number;
}

/**
 * One held run per schedule tick in [from, to) that is not in the future, with `trigger: "backfill"` and its `logicalDate`,
 * then admission releases them at most `maxConcurrentRuns` at a time (and never past the flow's
 * own cap), so Redis holds only the jobs of runs allowed to run.
 */
export async function startBackfill(deps: AdmissionDeps, request: BackfillRequest): Promise<BackfillStarted> {
  if (!(request.from < request.to)) throw new AxBackfillRangeError(request.from, request.to);
  // Ticks still to come are the schedule's: run now, they would run early and the schedule skip them.
  const until = new Date(Math.min(request.to.getTime(), Date.now() + 1));
  if (!(request.from < until)) throw new AxBackfillRangeError(request.from, request.to, true);
  const version = await currentFlowVersion(deps.db, request.flow);
  if (!version) throw await unknownFlowError(deps.db, request.flow);
  const settings = await flowSettings(deps.db, request.flow);
  const schedule = (settings?.schedule as Schedule | null | undefined) ?? request.schedule;
  if (!schedule) throw new AxNoScheduleError(request.flow);
  const maxTicks = Math.min(request.maxTicks ?? DEFAULT_MAX_BACKFILL_TICKS, MAX_BACKFILL_TICKS);
  // One tick past the limit is enough to refuse: counting a range of a year of seconds would hold the process for minutes.
  const ticks = await scheduleTicks(schedule, request.from, until, maxTicks + 1);
  if (ticks.length > maxTicks) throw new AxTooManyTicksError(request.flow, ticks.length, maxTicks, maxTicks === MAX_BACKFILL_TICKS);
  if (ticks.length === 0)
    throw new AxNoTicksError(request.flow, request.from, until, typeof schedule === "string" ? { cron: schedule } : schedule);
  const backfillId = randomUUID();
  const flowCap = settings?.maxConcurrentRuns ?? undefined;
  const cap = request.maxConcurrentRuns ?? flowCap ?? DEFAULT_BACKFILL_CONCURRENCY;
  const created = await createBackfill(
    deps.db,
    {
      id: backfillId,
      flow: version,
      from: request.from,
      to: request.to,
      maxConcurrentRuns: cap,
      ticks,
    },
    newRunId,
  );
  await dispatchCommitted(admitFlow(deps, request.flow));
  return { backfillId, ticks: ticks.length, created, maxConcurrentRuns: Math.min(cap, flowCap ?? cap) };
}

/**
 * Runs not started yet end `cancelled` at once; started ones are cancelled like any run.
 * `cancelledRuns` counts both.
 */
export async function cancelBackfill(deps: AdmissionDeps, backfillId: string): Promise<{ backfillId: string; cancelledRuns: number }> {
  const records = await cancelBackfillRecords(deps.db, backfillId, (runId) => {
    const error = new AxCancelledError(runId);
    return { name: error.name, message: error.message, stack: null, kind: "error" };
  });
  if (!records) throw new AxBackfillNotFoundError(backfillId);
  // Never dispatched, they have nothing in Redis to stop; listeners hear of them as of any cancel.
  for (const run of records.heldCancelled) deps.queues.events.publish({ name: "run_cancelled", ...run });
  const results = await Promise.all(records.active.map((runId) => cancelRun(deps, runId)));
  return { backfillId, cancelledRuns: records.heldCancelled.length + results.filter((r) => r?.cancelled).length };
}

/**
 * Reruns every failed or cancelled tick of a backfill (`only: "failed"`: the nodes that did not
 * succeed and what follows them; the rest keep their results), each new run held under the
 * backfill's cap and taking the old one's place among the ticks of every backfill listing it, so
 * progress and `ax backfill` follow the retries. The old run stays in history, as the new run's
 * `rerunOf`. Concurrent retries rerun each tick once. `retried` counts the new runs (0 when no tick
 * failed); `maxConcurrentRuns` is how many go at once now (the flow's own cap when smaller).
 */
export async function retryBackfill(
  deps: RerunDeps,
  backfillId: string,
): Promise<{ backfillId: string; retried: number; maxConcurrentRuns: number }> {
  const found = await retryableBackfillRuns(deps.db, backfillId);
  if (!found) throw new AxBackfillNotFoundError(backfillId);
  if (found.cancelled) throw new AxBackfillCancelledError(backfillId);
  let retried = 0;
  for (const runId of found.runIds) if (await rerunRun(deps, runId, { only: "failed" }, backfillId)) retried++;
  if (retried > 0) await dispatchCommitted(admitFlow(deps, found.flow));
  const [info, settings] = await Promise.all([backfillInfo(deps.db, backfillId), flowSettings(deps.db, found.flow)]);
  const cap = info?.maxConcurrentRuns ?? DEFAULT_BACKFILL_CONCURRENCY;
  return { backfillId, retried, maxConcurrentRuns: Math.min(cap, settings?.maxConcurrentRuns ?? cap) };
}
