// After an attempt's function: its outcome written (retry, fail, succeed), then the events and jobs that follow.
import {
  abandonAttempt,
  descendantsOf,
  failNode,
  firstFailedNode,
  reclaimLostStart,
  retryAttempt,
  unchargedAttempts,
  type AttemptRef,
  type Advanced,
  type AttemptOutcome,
  type CompleteRequest,
  type DagNode,
  type TaskFailure,
} from "@ax/store";
import type { AxEventName, NewAxEvent } from "@ax/coordinator";
import type { CachedDag } from "./dag-cache.js";
import { toTaskFailure } from "./failure.js";
import { lazyChild } from "./log-capture.js";
import { recordOutcome } from "./record-outcome.js";
import { withDbRetry } from "./db-retry.js";
import { decideRetry, type RetryDecision } from "./retry-policy.js";
import { AxOutcomeNotRecordedError, AxResourceLimitError } from "@ax/common";
import { attemptKey, type AttemptDeps, type FailurePolicy, type Next, type RunMeta } from "./attempt-deps.js";

function failureKind(outcome: AttemptOutcome, error: unknown) {
  if (outcome === "timed_out") return "timeout" as const;
  if (error instanceof AxResourceLimitError) return "resource" as const;
  if (outcome === "heartbeat_lost" || outcome === "crashed") return outcome;
  return "error" as const;
}

/**
 * An event of the attempt's task. Events are written out field by field, here and in `runEvent`:
 * on the hot path, spreading the run into the event and the event into another cost several µs
 * each.
 */
export function nodeEvent(deps: AttemptDeps, name: AxEventName, run: RunMeta, node: DagNode, attempt: number): NewAxEvent {
  const event: NewAxEvent = {
    name,
    runId: run.runId,
    flow: run.flow,
    businessKey: run.businessKey,
    nodeKey: node.key,
    task: node.task,
    attempt,
  };
  // The group travels with the event: the coordinator that evaluates alerts may not have the task's code.
  const alertGroup = deps.tasks.get(node.task)?.options.alertGroup;
  if (alertGroup) event.alertGroup = alertGroup;
  return event;
}

/** An event of the attempt's run. */
export function runEvent(name: AxEventName, run: RunMeta): NewAxEvent {
  return { name, runId: run.runId, flow: run.flow, businessKey: run.businessKey };
}

export interface FailedAttempt {
  attempt: number;
  error: unknown;
  outcome: AttemptOutcome;
  policy: FailurePolicy;
  run: RunMeta;
  /** When the attempt started; unknown for a failure of ax's own before its function ran. */
  startedAt?: Date;
  /** When its function ended, by PostgreSQL's clock (see `AttemptEnd`); unknown for a failure of ax's own. */
  endedAt?: Date;
  /** For an attempt whose worker died: the node's crashed attempts before it (see `CRASHES_REDELIVERED`). */
  crashesBefore?: number;
}

/**
 * Runs an attempt's closing write, and when it matched nothing because PostgreSQL lost the
 * attempt's start in a crash (the node is back to queued at this attempt, with no row for it),
 * records the start again and runs the write once more. Otherwise the attempt's work would be
 * dropped and its node run again under the same attempt number.
 */
export async function unlessStartLost<T>(
  deps: AttemptDeps,
  ref: AttemptRef,
  startedAt: Date | undefined,
  write: () => Promise<T>,
  applied: (written: T) => boolean,
): Promise<T> {
  const written = await write();
  if (applied(written) || !startedAt) return written;
  if (!(await reclaimLostStart(deps.db, { ...ref, worker: deps.workerId, startedAt }))) return written;
  deps.log.warn({ ...ref }, "PostgreSQL had lost this attempt's start (a crash); recorded it again with the attempt's outcome");
  return write();
}

/** What the write that closed an attempt changed, for the events and jobs that follow it. */
export type Recorded =
  | { kind: "succeeded"; advanced: Advanced }
  | { kind: "retrying" /** Undefined: the write matched nothing. */; nextRetryAt: Date | undefined; delayMs: number; failure: TaskFailure }
  | { kind: "failed"; advanced: Advanced; failure: TaskFailure };

/**
 * Retry per policy (a delayed job for the next attempt) or fail the node and skip its
 * descendants; recorded within a bound of `ended`, when the attempt's function ended.
 */
export async function closeFailedAttempt(
  deps: AttemptDeps,
  dag: CachedDag,
  node: DagNode,
  failed: FailedAttempt,
  ended = Date.now(),
): Promise<Next | undefined> {
  const { attempt, run } = failed;
  const recorded = await recordOutcome(
    {
      full: () => writeFailure(deps, dag, node, failed),
      short: (why) => writeFailure(deps, dag, node, { ...failed, error: new AxOutcomeNotRecordedError(node.task, attempt, why) }),
      giveUp: () => abandonAttempt(deps.db, { runId: run.runId, nodeKey: node.key, attempt, worker: deps.workerId }),
    },
    lazyChild(deps.log, { runId: run.runId, node: node.key, attempt }),
    ended,
  );
  return recorded ? afterRecorded(deps, dag, node, run, attempt, recorded) : undefined;
}

/**
 * The retry policy's decision for a failed attempt. Attempts handed back by stopping workers
 * charge no retry; they are looked up only when the count of attempts alone has used the
 * retries up, so a failure within its retries costs no read.
 */
async function retryDecision(deps: AttemptDeps, failed: FailedAttempt, ref: AttemptRef): Promise<RetryDecision> {
  const crashesBefore = failed.crashesBefore;
  const decision = decideRetry(failed.policy, failed.error, ref.attempt, { crashesBefore });
  if (decision.retry || !decision.exhausted || ref.attempt === 1) return decision;
  const uncharged = await withDbRetry(() => unchargedAttempts(deps.db, ref));
  return uncharged === 0 ? decision : decideRetry(failed.policy, failed.error, ref.attempt, { crashesBefore, uncharged });
}

export async function writeFailure(deps: AttemptDeps, dag: CachedDag, node: DagNode, failed: FailedAttempt): Promise<Recorded> {
  const { attempt, outcome, run } = failed;
  const ref = { runId: run.runId, nodeKey: node.key, attempt };
  const failure = toTaskFailure(failed.error, failureKind(outcome, failed.error));
  const decision = await retryDecision(deps, failed, ref);
  if (decision.retry) {
    const retry = { ...ref, outcome, error: failure, delayMs: decision.delayMs, endedAt: failed.endedAt };
    const nextRetryAt = await unlessStartLost(
      deps,
      ref,
      failed.startedAt,
      () => retryAttempt(deps.db, retry),
      (due) => due !== undefined,
    );
    return { kind: "retrying", nextRetryAt, delayMs: decision.delayMs, failure };
  }
  const failing = {
    ...ref,
    endedAt: failed.endedAt,
    outcome,
    error: { ...failure, notRetried: decision.reason },
    descendants: descendantsOf(dag.dag, [node.key]),
    blocking: failed.policy.onFailure === "fail",
  };
  const advanced = await unlessStartLost(
    deps,
    ref,
    failed.startedAt,
    () => failNode(deps.db, failing),
    (a) => a.applied,
  );
  return { kind: "failed", advanced, failure };
}

export async function afterRecorded(
  deps: AttemptDeps,
  dag: CachedDag,
  node: DagNode,
  run: RunMeta,
  attempt: number,
  recorded: Recorded,
): Promise<Next | undefined> {
  if (recorded.kind === "succeeded") {
    if (!recorded.advanced.applied) {
      deps.log.warn(
        { runId: run.runId, node: node.key, attempt },
        "attempt finished but its node was closed meanwhile (cancelled or taken over); result dropped",
      );
      return undefined;
    }
    deps.metrics.consecutiveFailures.set({ task: node.task }, 0);
    deps.events.publish(nodeEvent(deps, "task_succeeded", run, node, attempt));
    return afterAdvance(deps, recorded.advanced, run, dag.versionId);
  }
  const error = { name: recorded.failure.name, message: recorded.failure.message };
  if (recorded.kind === "retrying") {
    if (!recorded.nextRetryAt) return undefined;
    deps.metrics.retries.inc({ task: node.task });
    deps.events.publish({
      ...nodeEvent(deps, "task_retrying", run, node, attempt),
      error,
      nextRetryAt: recorded.nextRetryAt.toISOString(),
    });
    await deps.jobs.add([
      {
        runId: run.runId,
        nodeKey: node.key,
        task: node.task,
        queue: node.queue,
        attempt: attempt + 1,
        flowVersionId: dag.versionId,
        delayMs: recorded.delayMs,
      },
    ]);
    return undefined;
  }
  if (!recorded.advanced.applied) return undefined;
  // Like the consecutive_failures alert: final failures only, a retried attempt is not one.
  deps.metrics.consecutiveFailures.inc({ task: node.task });
  deps.events.publish({ ...nodeEvent(deps, "task_failed", run, node, attempt), error });
  return afterAdvance(deps, recorded.advanced, run, dag.versionId);
}

/** The first dependant this worker would run itself, for the completion to start if it makes it ready. */
export function continuation(deps: AttemptDeps, dag: CachedDag, node: DagNode, runId: string): CompleteRequest["continueWith"] {
  if (!deps.continuesHere) return undefined;
  for (const key of node.downstream) {
    const next = dag.nodes.get(key);
    if (!next) continue;
    const ready = { runId, nodeKey: key, task: next.task, queue: next.queue, attempt: 1, flowVersionId: dag.versionId };
    if (deps.continuesHere(ready)) return { nodeKey: key, upstreamKeys: next.upstream };
  }
  return undefined;
}

/**
 * Enqueues the nodes the write made ready, but one that runs next in this process: the one the
 * completion started, or else one that may continue here (fenced by the next attempt).
 */
async function afterAdvance(deps: AttemptDeps, advanced: Advanced, run: RunMeta, flowVersionId: number): Promise<Next | undefined> {
  let next: Next | undefined = advanced.continued ? undefined : advanced.ready.find((n) => !n.delayMs && deps.continuesHere?.(n));
  // The started continuation is this process's from now on: adding the other jobs may wait for Redis
  // for longer than the lost-outcome sweep allows a running attempt that nobody executes.
  const reserved = advanced.continued && attemptKey({ runId: run.runId, ...advanced.continued });
  if (reserved) deps.executing.add(reserved);
  try {
    await deps.jobs.add(next ? advanced.ready.filter((n) => n !== next) : advanced.ready);
  } catch (error) {
    // Not run here after all: the sweep hands the continuation back.
    if (reserved) deps.executing.delete(reserved);
    throw error;
  }
  if (advanced.continued) {
    const { nodeKey, attempt } = advanced.continued;
    next = { runId: run.runId, nodeKey, attempt, flowVersionId, started: advanced.continued };
  }
  if (advanced.runFinished) {
    deps.metrics.runsFinished.inc({ flow: run.flow, status: advanced.runFinished });
    if (advanced.runFinished === "success") deps.events.publish(runEvent("run_succeeded", run));
    if (advanced.runFinished === "failed") await publishRunFailed(deps, run);
  }
  return next;
}

/** `run_failed` names the node whose failure a listener wants to know about: one read, on failed runs only. */
async function publishRunFailed(deps: AttemptDeps, run: RunMeta): Promise<void> {
  const failed = await firstFailedNode(deps.db, run.runId).catch((err: unknown) => {
    deps.log.warn({ err, runId: run.runId }, "could not read the failed run's first failed node; run_failed goes without it");
    return undefined;
  });
  deps.events.publish({ ...runEvent("run_failed", run), ...failed });
}
