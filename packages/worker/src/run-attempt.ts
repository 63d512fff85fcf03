import { setTimeout as sleep } from "node:timers/promises";
import {
  abandonAttempt,
  assertJson,
  descendantsOf,
  failNode,
  inspectAttempt,
  jsonBytes,
  recordProgress,
  retryAttempt,
  type Advanced,
  type AttemptOutcome,
  type AttemptRef,
  type CompleteRequest,
  type Db,
  type DagNode,
  type Json,
  type ReadyNode,
  type RunningAttempt,
  type StartedAttempt,
  type TaskFailure,
} from "@ax/store";
import type { BatchedEnqueue, EventPublisher, NewAxEvent, NodeJobData } from "@ax/coordinator";
import type { Logger } from "pino";
import type { AttemptWrites } from "./attempt-writes.js";
import type { CachedDag, DagCache } from "./dag-cache.js";
import { withDbRetry } from "./db-retry.js";
import { execute, type AttemptResult } from "./executors/index.js";
import { toTaskFailure } from "./failure.js";
import type { WorkerMetrics } from "./metrics.js";
import { nodeArgs } from "./node-args.js";
import { lazyChild } from "./log-capture.js";
import { recordOutcome } from "./record-outcome.js";
import { decideRetry } from "./retry-policy.js";
import type { AttemptStore } from "./once-scope.js";
import type { TaskLogWriter } from "./task-logs.js";
import type { ResolvedTaskOptions, RunnableTask, TaskSource } from "./task-definition.js";
import {
  AxAttemptAbandonedError,
  AxOutcomeNotRecordedError,
  AxResourceLimitError,
  AxResultTooLargeError,
  AxWorkerCrashedError,
  maskSecrets,
} from "@ax/common";

export interface AttemptDeps {
  db: Db;
  dags: DagCache;
  tasks: TaskSource;
  workerId: string;
  log: Logger;
  metrics: WorkerMetrics;
  /** A running attempt whose worker missed heartbeats this long is presumed crashed. */
  leaseMs: number;
  /** Attempts this process is executing now (`run/node/attempt`). */
  executing: Set<string>;
  /** Group-committed fence and completion writes. */
  writes: AttemptWrites;
  /** Newly ready and retrying nodes' jobs, added to Redis together. */
  jobs: Pick<BatchedEnqueue, "add">;
  /** Lifecycle events, to the cluster's stream (buffered: publishing never waits on Redis). */
  events: Pick<EventPublisher, "publish">;
  /** Where `ax.context().log` lines are stored. */
  taskLogs: TaskLogWriter;
  /** Where this worker's attempts claim `ax.once` keys. */
  onceStore: AttemptStore;
  /**
   * Whether a node this attempt made ready may start in this process at once (local continuation)
   * instead of going through Redis: its task is served here and holds no limits.
   */
  continuesHere?: ((node: ReadyNode) => boolean) | undefined;
}

/** One attempt to run: a BullMQ job's data, or a node an attempt of this process made ready. */
export interface AttemptJob extends NodeJobData {
  /** The run's BullMQ priority, kept by the jobs its attempts add. */
  priority?: number | undefined;
  /** Set when the completion that made the node ready also started it: no fence of its own. */
  started?: StartedAttempt | undefined;
}

/** The node to run next in this process, started already or to be fenced. */
type Next = Omit<AttemptJob, "priority">;

/** The run a job belongs to, as events and logs name it. */
interface RunMeta {
  runId: string;
  flow: string;
  businessKey: string | null;
}

type FailurePolicy = Pick<
  ResolvedTaskOptions,
  "retries" | "retryBackoffMs" | "backoff" | "jitter" | "maxBackoffMs" | "retryOn" | "noRetryOn" | "onFailure"
>;

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
 * One attempt of one node: fence, execute, record, advance the DAG. `cancel` aborts the
 * attempt's task when its run is cancelled. Returns the node to run next in this process, when
 * the attempt made one ready that `continuesHere` accepts: its job is then not written to Redis
 * (a crash before its fence leaves it `queued`, and the reconciler adds the job).
 */
export async function runAttempt(shared: AttemptDeps, job: AttemptJob, cancel?: AbortSignal): Promise<AttemptJob | undefined> {
  const deps = withRunPriority(shared, job.priority);
  const { runId, nodeKey, attempt, flowVersionId } = job;
  const dag = await withDbRetry(() => deps.dags.get(flowVersionId));
  const node = dag.nodes.get(nodeKey);
  if (!node) {
    deps.log.error({ runId, nodeKey, flowVersionId }, "job names a node its flow version does not have; dropped");
    return undefined;
  }
  const ref = { runId, nodeKey, attempt };
  const task = deps.tasks.get(node.task);
  if (!task) {
    // Workers fetch only from the queues of tasks they define; the reconciler fails a node no worker serves.
    deps.log.error({ runId, nodeKey, task: node.task }, "fetched a job for a task this process does not define; left to the reconciler");
    return undefined;
  }
  const executing = attemptKey(ref);
  // The fence answers an attempt running under this worker as started (a start whose reply was
  // lost is retried), so a second job for an attempt this process runs must stop here.
  if (deps.executing.has(executing)) return undefined;
  deps.executing.add(executing);
  try {
    const started = job.started ?? (await fence(deps, dag, node, ref));
    if (!started) return undefined;
    const run: RunMeta = { runId, flow: started.flow, businessKey: started.businessKey };
    let next: Next | undefined;
    try {
      next = await executeStarted(deps, dag, node, task, attempt, started, run, cancel);
    } catch (error) {
      // Our own failure after the fence (not the task's): close the attempt rather than leave it running.
      deps.log.error({ err: error, runId, node: nodeKey, attempt }, "attempt processing failed; closing the attempt as failed");
      next = await closeFailedAttempt(deps, dag, node, { attempt, error, outcome: "failed", policy: task.options, run });
    }
    return (
      next && {
        runId: next.runId,
        nodeKey: next.nodeKey,
        attempt: next.attempt,
        flowVersionId: next.flowVersionId,
        started: next.started,
        priority: job.priority,
      }
    );
  } finally {
    deps.executing.delete(executing);
  }
}

/** The jobs an attempt adds (its dependants, its retry) keep the BullMQ priority of the run's jobs. */
function withRunPriority(deps: AttemptDeps, priority: number | undefined): AttemptDeps {
  if (!priority) return deps;
  const { jobs } = deps;
  return { ...deps, jobs: { add: (nodes) => jobs.add(nodes.map((n) => ({ ...n, priority }))) } };
}

/**
 * Starts the attempt, or finds why not: a duplicate (undefined), or an attempt whose worker died
 * or gave it up, which is closed as `crashed` here (undefined too).
 */
async function fence(deps: AttemptDeps, dag: CachedDag, node: DagNode, ref: AttemptRef): Promise<StartedAttempt | undefined> {
  const request = { ...ref, upstreamKeys: node.upstream };
  const started = await withDbRetry(() => deps.writes.start(request));
  if (started) return started;
  const verdict = await awaitLeaseVerdict(deps, ref);
  // Our own start committed only after the retried start's snapshot: now the fence sees it.
  if (verdict === "ours") return withDbRetry(() => deps.writes.start(request));
  if (verdict) await closeCrashed(deps, dag, node, ref, verdict);
  return undefined;
}

/** How `AttemptDeps.executing` names an attempt. */
export const attemptKey = (ref: AttemptRef) => `${ref.runId}/${ref.nodeKey}/${ref.attempt}`;

async function executeStarted(
  deps: AttemptDeps,
  dag: CachedDag,
  node: DagNode,
  task: RunnableTask,
  attempt: number,
  started: StartedAttempt,
  run: RunMeta,
  cancel?: AbortSignal,
): Promise<Next | undefined> {
  const { runId } = run;
  const nodeKey = node.key;
  const ref = { runId, nodeKey, attempt };
  const log = lazyChild(deps.log, { runId, flow: run.flow, node: nodeKey, attempt, businessKey: run.businessKey });
  if (started.runStarted) deps.events.publish({ name: "run_started", ...run });
  deps.events.publish({ name: "task_started", ...nodeEvent(deps, run, node, attempt) });
  if (started.queuedAt) {
    deps.metrics.queueWait.observe({ task: node.task }, (started.startedAt.getTime() - started.queuedAt.getTime()) / 1000);
  }
  const args = nodeArgs(node, started.payload, started.upstream);
  // Sizes and summaries cost a serialisation each: only when someone reads info lines.
  const logInfo = deps.log.isLevelEnabled("info");
  if (logInfo) log.info({ task: node.task, inputBytes: jsonBytes(args) }, "attempt started");

  const taskLog = deps.taskLogs.attempt(ref);
  const t0 = performance.now();
  // From here the attempt's function runs; once it ends, its outcome is recorded within a bound.
  const executed: AttemptResult = await execute({
    task,
    args,
    context: {
      ...run,
      task: node.task,
      nodeKey,
      attempt,
      idempotencyKey: `${runId}:${nodeKey}`,
      logicalDate: started.logicalDate,
      log: taskLog.wrap(log),
    },
    onProgress: (progress) => {
      recordProgress(deps.db, { ...ref, progress }).catch((err) => log.warn({ err }, "could not store progress"));
    },
    onLog: (line) => taskLog.add(line),
    cancel,
    store: deps.onceStore,
  });
  taskLog.close();
  const checked = executed.ok ? checkResult(task.options, executed.value) : executed;
  const durationMs = Math.round(performance.now() - t0);
  const ended = Date.now();
  const outcome: AttemptOutcome = checked.ok ? "success" : checked.outcome;
  deps.metrics.attemptDuration.observe({ task: node.task, outcome }, durationMs / 1000);
  deps.metrics.attempts.inc({ task: node.task, outcome });

  if (checked.ok) {
    const result = checked.value as Json;
    deps.metrics.consecutiveFailures.set({ task: node.task }, 0);
    if (logInfo)
      log.info({ task: node.task, outcome, durationMs, outputBytes: jsonBytes(result), summary: summarise(result) }, "attempt finished");
    const failed = { attempt, outcome: "failed" as const, policy: task.options, run };
    const recorded = await recordOutcome<Recorded>(
      {
        full: async () => ({
          kind: "succeeded",
          advanced: await deps.writes.complete({
            ...ref,
            result,
            downstream: node.downstream,
            continueWith: continuation(deps, dag, node, runId),
          }),
        }),
        short: (why) => writeFailure(deps, dag, node, { ...failed, error: new AxOutcomeNotRecordedError(node.task, attempt, why) }),
        giveUp: () => abandonAttempt(deps.db, { ...ref, worker: deps.workerId }),
      },
      log,
      ended,
    );
    return recorded ? afterRecorded(deps, dag, node, run, attempt, recorded) : undefined;
  }
  deps.metrics.consecutiveFailures.inc({ task: node.task });
  const failure = toTaskFailure(checked.error);
  log.warn({ task: node.task, outcome, durationMs, error: { name: failure.name, message: failure.message } }, "attempt finished");
  if (outcome === "timed_out")
    deps.events.publish({
      name: "task_timed_out",
      ...nodeEvent(deps, run, node, attempt),
      error: { name: failure.name, message: failure.message },
    });
  return closeFailedAttempt(deps, dag, node, { attempt, error: checked.error, outcome, policy: task.options, run }, ended);
}

function checkResult(options: ResolvedTaskOptions, value: unknown): AttemptResult {
  const result = value === undefined ? null : value;
  try {
    assertJson(result, `result of task "${options.name}"`);
  } catch (error) {
    return { ok: false, error, outcome: "failed" };
  }
  const bytes = jsonBytes(result);
  if (bytes > options.maxResultBytes) {
    return { ok: false, error: new AxResultTooLargeError(options.name, bytes, options.maxResultBytes), outcome: "failed" };
  }
  return { ok: true, value: result };
}

function failureKind(outcome: AttemptOutcome, error: unknown) {
  if (outcome === "timed_out") return "timeout" as const;
  if (error instanceof AxResourceLimitError) return "resource" as const;
  if (outcome === "heartbeat_lost" || outcome === "crashed") return outcome;
  return "error" as const;
}

function nodeEvent(deps: AttemptDeps, run: RunMeta, node: DagNode, attempt: number): Omit<NewAxEvent, "name"> {
  // The group travels with the event: the coordinator that evaluates alerts may not have the task's code.
  const alertGroup = deps.tasks.get(node.task)?.options.alertGroup;
  return { ...run, nodeKey: node.key, task: node.task, attempt, ...(alertGroup ? { alertGroup } : {}) };
}

interface FailedAttempt {
  attempt: number;
  error: unknown;
  outcome: AttemptOutcome;
  policy: FailurePolicy;
  run: RunMeta;
}

/** What the write that closed an attempt changed, for the events and jobs that follow it. */
type Recorded =
  | { kind: "succeeded"; advanced: Advanced }
  | { kind: "retrying"; applied: boolean; delayMs: number; failure: TaskFailure }
  | { kind: "failed"; advanced: Advanced; failure: TaskFailure };

/**
 * Retry per policy (a delayed job for the next attempt) or fail the node and skip its
 * descendants; recorded within a bound of `ended`, when the attempt's function ended.
 */
async function closeFailedAttempt(
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

async function writeFailure(deps: AttemptDeps, dag: CachedDag, node: DagNode, failed: FailedAttempt): Promise<Recorded> {
  const { attempt, outcome, run } = failed;
  const ref = { runId: run.runId, nodeKey: node.key, attempt };
  const failure = toTaskFailure(failed.error, failureKind(outcome, failed.error));
  const decision = decideRetry(failed.policy, failed.error, attempt);
  if (decision.retry) {
    const applied = await retryAttempt(deps.db, { ...ref, outcome, error: failure, delayMs: decision.delayMs });
    return { kind: "retrying", applied, delayMs: decision.delayMs, failure };
  }
  const advanced = await failNode(deps.db, {
    ...ref,
    outcome,
    error: failure,
    descendants: descendantsOf(dag.dag, [node.key]),
    blocking: failed.policy.onFailure === "fail",
  });
  return { kind: "failed", advanced, failure };
}

async function afterRecorded(
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
    deps.events.publish({ name: "task_succeeded", ...nodeEvent(deps, run, node, attempt) });
    return afterAdvance(deps, recorded.advanced, run, dag.versionId);
  }
  const event = { ...nodeEvent(deps, run, node, attempt), error: { name: recorded.failure.name, message: recorded.failure.message } };
  if (recorded.kind === "retrying") {
    if (!recorded.applied) return undefined;
    deps.metrics.retries.inc({ task: node.task });
    deps.events.publish({ name: "task_retrying", ...event });
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
  deps.events.publish({ name: "task_failed", ...event });
  return afterAdvance(deps, recorded.advanced, run, dag.versionId);
}

/** The first dependant this worker would run itself, for the completion to start if it makes it ready. */
function continuation(deps: AttemptDeps, dag: CachedDag, node: DagNode, runId: string): CompleteRequest["continueWith"] {
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
  await deps.jobs.add(next ? advanced.ready.filter((n) => n !== next) : advanced.ready);
  if (advanced.continued) {
    const { nodeKey, attempt } = advanced.continued;
    next = { runId: run.runId, nodeKey, attempt, flowVersionId, started: advanced.continued };
  }
  if (advanced.runFinished) {
    deps.metrics.runsFinished.inc({ flow: run.flow, status: advanced.runFinished });
    if (advanced.runFinished === "success") deps.events.publish({ name: "run_succeeded", ...run });
    if (advanced.runFinished === "failed") deps.events.publish({ name: "run_failed", ...run });
  }
  return next;
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
  deps.log.warn(
    { runId: ref.runId, node: node.key, attempt: ref.attempt, lostWorker: found.worker, abandoned: found.abandoned },
    found.abandoned ? "attempt's worker gave it up; closing it as crashed" : "attempt's worker died; closing it as crashed",
  );
  deps.metrics.attempts.inc({ task: node.task, outcome: "crashed" });
  // Whatever this makes ready goes through Redis: a crashed attempt's job has no continuation.
  await closeFailedAttempt({ ...deps, continuesHere: undefined }, dag, node, {
    attempt: ref.attempt,
    error: found.abandoned ? new AxAttemptAbandonedError(found.worker, ref.attempt) : new AxWorkerCrashedError(found.worker, ref.attempt),
    outcome: "crashed",
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
 */
async function awaitLeaseVerdict(deps: AttemptDeps, ref: AttemptRef): Promise<RunningAttempt | "ours" | undefined> {
  const giveUpAt = Date.now() + 2 * deps.leaseMs;
  for (;;) {
    const found = await withDbRetry(() => inspectAttempt(deps.db, ref, deps.leaseMs));
    if (found?.status !== "running" || found.attempt !== ref.attempt) return undefined;
    if (found.workerLost) return found;
    // runAttempt let only this job through for the attempt, so nothing here executes it.
    if (found.worker === deps.workerId) return "ours";
    if (Date.now() + found.leaseLeftMs > giveUpAt) return undefined;
    await sleep(found.leaseLeftMs + LEASE_RECHECK_MARGIN_MS);
  }
}

/** A log line's glimpse of a result: secret-looking keys masked (see docs/security.md), then cut short. */
export function summarise(value: Json): string {
  const text = JSON.stringify(maskSecrets(value));
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}
