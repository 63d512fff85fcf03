// Before an attempt's function: the fence that starts it, and what a job that lost the fence means.
import { setTimeout as sleep } from "node:timers/promises";
import { crashedAttempts, inspectAttempt, type AttemptRef, type DagNode, type RunningAttempt, type StartedAttempt } from "@ax/store";
import type { CachedDag } from "./dag-cache.js";
import { withDbRetry } from "./db-retry.js";
import { AxAttemptAbandonedError, AxWorkerCrashedError } from "@ax/common";
import type { AttemptDeps, FailurePolicy, RunMeta } from "./attempt-deps.js";
import { closeFailedAttempt } from "./attempt-close.js";

/** Past the lease's end before looking again, so PostgreSQL's clock agrees it lapsed. */
const LEASE_RECHECK_MARGIN_MS = 50;

/** Used when a crashed attempt's task is not defined here (its deploy changed meanwhile): fail the node once. */
const NO_RETRY: FailurePolicy = {
  retries: 0,
  retryBackoffMs: 0,
  backoff: "fixed",
  jitter: 0,
  maxBackoffMs: 0,
  retryOn: null,
  noRetryOn: [],
  onFailure: "fail",
};

/**
 * Starts the attempt, or finds why not: a duplicate (undefined), or an attempt whose worker died
 * or gave it up, which is closed as `crashed` here (undefined too).
 */
export async function fence(deps: AttemptDeps, dag: CachedDag, node: DagNode, ref: AttemptRef): Promise<StartedAttempt | undefined> {
  // Written out: a property after a spread costs about 0.5 µs in Node 20, on every attempt.
  const request = { runId: ref.runId, nodeKey: ref.nodeKey, attempt: ref.attempt, upstreamKeys: node.upstream };
  const started = await withDbRetry(() => deps.writes.start(request));
  if (started) return started;
  const verdict = await awaitLeaseVerdict(deps, ref);
  if (verdict === "missing") {
    deps.foreignJobs.drop({ ...ref, flowVersionId: dag.versionId }, "run");
    return undefined;
  }
  // Our own start committed (its reply was lost, or it committed after the retried start's
  // snapshot): asked to resume, the fence answers it.
  if (verdict === "ours") return withDbRetry(() => deps.writes.start({ ...request, resume: true }));
  if (verdict) await closeCrashed(deps, dag, node, ref, verdict);
  return undefined;
}

/**
 * A job that lost the fence is a duplicate, unless its node is still `running` this attempt
 * under a worker whose lease lapsed, or that gave the attempt up: then that worker died
 * mid-attempt (BullMQ's stalled-job recovery or the reconciler brought the job back) or could
 * not record its outcome, so the attempt is closed as `crashed` and retried or failed per the
 * task's policy.
 */
async function closeCrashed(deps: AttemptDeps, dag: CachedDag, node: DagNode, ref: AttemptRef, found: RunningAttempt): Promise<void> {
  const run: RunMeta = { runId: ref.runId, flow: found.flow, businessKey: found.businessKey };
  const error = found.abandoned
    ? new AxAttemptAbandonedError(found.worker, ref.attempt)
    : new AxWorkerCrashedError(found.worker, ref.attempt);
  deps.log.warn(
    {
      runId: ref.runId,
      flow: run.flow,
      node: node.key,
      task: node.task,
      attempt: ref.attempt,
      businessKey: run.businessKey,
      lostWorker: found.worker,
      abandoned: found.abandoned,
      outcome: "crashed",
      // Until now: when the worker died is not known, only that it has not been heard from since.
      durationMs: found.runningMs,
      error: { name: error.name, message: error.message },
    },
    found.abandoned ? "attempt's worker gave it up; closing it as crashed" : "attempt's worker died; closing it as crashed",
  );
  deps.metrics.attempts.inc({ task: node.task, outcome: "crashed" });
  if (found.runningMs !== null) deps.metrics.attemptDuration.observe({ task: node.task, outcome: "crashed" }, found.runningMs / 1000);
  // Whatever this makes ready goes through Redis: a crashed attempt's job has no continuation.
  await closeFailedAttempt({ ...deps, continuesHere: undefined }, dag, node, {
    attempt: ref.attempt,
    error,
    outcome: "crashed",
    // A worker that died is redelivered whatever `retries` says, a few times; one that gave its attempt up is not.
    ...(found.abandoned ? {} : { crashesBefore: await crashedAttempts(deps.db, ref) }),
    policy: deps.tasks.get(node.task)?.options ?? NO_RETRY,
    run,
  });
}

/**
 * BullMQ hands a dead worker's job back once its lock lapses, which can be before that worker's
 * PostgreSQL lease does. Dropping the job then would leave the node to the reconciler, so the job
 * waits for the lease to decide: lapsed (or given up) means crashed; the attempt closing, or its
 * worker still heartbeating after two leases, means it is alive and this job is a duplicate.
 * "ours": the attempt runs under this very worker, which no job of this process executes.
 * "missing": this history has no such node, so the job is not this cluster's.
 */
async function awaitLeaseVerdict(deps: AttemptDeps, ref: AttemptRef): Promise<RunningAttempt | "ours" | "missing" | undefined> {
  const giveUpAt = Date.now() + 2 * deps.leaseMs;
  for (;;) {
    const found = await withDbRetry(() => inspectAttempt(deps.db, ref, deps.leaseMs));
    if (!found) return "missing";
    if (found.status !== "running" || found.attempt !== ref.attempt) return undefined;
    if (found.workerLost) return found;
    // runAttempt let only this job through for the attempt, so nothing here executes it.
    if (found.worker === deps.workerId) return "ours";
    if (Date.now() + found.leaseLeftMs > giveUpAt) return undefined;
    await sleep(found.leaseLeftMs + LEASE_RECHECK_MARGIN_MS);
  }
}
