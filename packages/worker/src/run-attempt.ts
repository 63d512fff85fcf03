import {
  abandonAttempt,
  assertJson,
  jsonBytes,
  recordProgress,
  type AttemptOutcome,
  type DagNode,
  type Json,
  type StartedAttempt,
} from "@ax/store";
import type { AttemptCancel } from "./attempt-cancel.js";
import type { CachedDag } from "./dag-cache.js";
import { withDbRetry } from "./db-retry.js";
import { execute, type AttemptResult } from "./executors/index.js";
import { toTaskFailure } from "./failure.js";
import { nodeArgs } from "./node-args.js";
import { lazyChild } from "./log-capture.js";
import { ProgressWrites } from "./progress-writes.js";
import { recordOutcome } from "./record-outcome.js";
import type { ResolvedTaskOptions, RunnableTask } from "./task-definition.js";
import {
  AxAttemptTakenOverError,
  AxCancelledError,
  AxOutcomeNotRecordedError,
  AxResultTooLargeError,
  AxWorkerStoppedError,
  maskSecrets,
} from "@ax/common";
import { attemptKey, type AttemptDeps, type AttemptJob, type Next, type RunMeta } from "./attempt-deps.js";
import {
  afterRecorded,
  closeFailedAttempt,
  continuation,
  nodeEvent,
  runEvent,
  unlessStartLost,
  writeFailure,
  type Recorded,
} from "./attempt-close.js";
import { fence } from "./attempt-fence.js";

/**
 * One attempt of one node: fence, execute, record, advance the DAG. `cancel` aborts the
 * attempt's task when its run is cancelled. Returns the node to run next in this process, when
 * the attempt made one ready that `continuesHere` accepts: its job is then not written to Redis
 * (a crash before its fence leaves it `queued`, and the reconciler adds the job).
 */
export async function runAttempt(shared: AttemptDeps, job: AttemptJob, cancel?: AttemptCancel): Promise<AttemptJob | undefined> {
  const deps = withRunPriority(shared, job.priority);
  const { runId, nodeKey, attempt, flowVersionId } = job;
  const dag = await withDbRetry(() => deps.dags.find(flowVersionId));
  if (!dag) {
    deps.foreignJobs.drop(job, "flow version");
    return undefined;
  }
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
  // lost is retried), so a second job for an attempt this process runs must stop here. A
  // continuation was marked executing by the completion that started it (see afterAdvance).
  if (!job.started && deps.executing.has(executing)) return undefined;
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

/**
 * The jobs an attempt adds (its dependants, its retry) keep the BullMQ priority of the run's jobs.
 * Such a run's next node always goes through its queue: run here at once, it would pass jobs of
 * higher priority waiting there. Jobs without a priority come first anyway (BullMQ's rule).
 */
function withRunPriority(deps: AttemptDeps, priority: number | undefined): AttemptDeps {
  if (!priority) return deps;
  const { jobs } = deps;
  return { ...deps, continuesHere: () => false, jobs: { add: (nodes) => jobs.add(nodes.map((n) => ({ ...n, priority }))) } };
}

async function executeStarted(
  deps: AttemptDeps,
  dag: CachedDag,
  node: DagNode,
  task: RunnableTask,
  attempt: number,
  started: StartedAttempt,
  run: RunMeta,
  cancel?: AttemptCancel,
): Promise<Next | undefined> {
  const begun = performance.now();
  const { runId } = run;
  const nodeKey = node.key;
  const ref = { runId, nodeKey, attempt };
  // The task's own lines (ax.context().log) carry the same fields as the attempt's start and end.
  const log = lazyChild(deps.log, { runId, flow: run.flow, node: nodeKey, task: node.task, attempt, businessKey: run.businessKey });
  if (started.runStarted) deps.events.publish(runEvent("run_started", run));
  deps.events.publish(nodeEvent(deps, "task_started", run, node, attempt));
  if (started.queuedAt) {
    deps.metrics.queueWait.observe({ task: node.task }, (started.startedAt.getTime() - started.queuedAt.getTime()) / 1000);
  }
  const args = nodeArgs(node, started.payload, started.upstream);
  // Sizes and summaries cost a serialisation each: only when someone reads info lines.
  const logInfo = deps.log.isLevelEnabled("info");
  if (logInfo) log.info({ inputBytes: jsonBytes(args) }, "attempt started");

  const taskLog = deps.taskLogs.attempt(ref);
  const progress = new ProgressWrites(
    (value) => recordProgress(deps.db, { ...ref, progress: value }),
    (err) => log.warn({ err }, "could not store progress"),
  );
  const t0 = performance.now();
  // From here the attempt's function runs; once it ends, its outcome is recorded within a bound.
  const executed: AttemptResult = await execute({
    task,
    args,
    // Objects on this path are written out: in Node 20 each property after a spread costs about 0.5 µs.
    context: {
      runId,
      flow: run.flow,
      businessKey: run.businessKey,
      task: node.task,
      nodeKey,
      attempt,
      idempotencyKey: `${started.originalRunId}:${nodeKey}`,
      logicalDate: started.logicalDate,
      log: taskLog.wrap(log),
    },
    onProgress: (value) => progress.submit(value),
    onLog: (line) => taskLog.add(line),
    cancel,
    store: deps.onceStore,
  });
  taskLog.close();
  const returned = performance.now();
  const durationMs = Math.round(returned - t0);
  // By PostgreSQL's clock, free of skew between machines: the start it recorded plus the time
  // measured here since, rounded up so that it never precedes the start.
  const endedAt = new Date(started.startedAt.getTime() + Math.ceil(returned - begun));
  await progress.flushed();
  if (!executed.ok && (cancel?.reason instanceof AxWorkerStoppedError || cancel?.reason instanceof AxAttemptTakenOverError)) {
    // The attempt was written `crashed` and its node queued again before it was aborted (this
    // worker is stopping, or another took the node over): no failure to record, none to count.
    deps.metrics.attemptDuration.observe({ task: node.task, outcome: "crashed" }, durationMs / 1000);
    deps.metrics.attempts.inc({ task: node.task, outcome: "crashed" });
    const why = cancel.reason instanceof AxWorkerStoppedError ? "this worker is stopping" : "it was taken over";
    log.info(
      { outcome: "crashed", durationMs, error: { name: cancel.reason.name, message: cancel.reason.message } },
      `attempt handed back: ${why}`,
    );
    return undefined;
  }
  const checked = executed.ok ? checkResult(task.options, executed.value) : executed;
  const ended = Date.now();
  const outcome: AttemptOutcome = checked.ok ? "success" : checked.outcome;
  // Stored as failed (there is no cancelled outcome), but counted apart: a dashboard's failure
  // rate must not rise because someone cancelled runs.
  const cancelled = !executed.ok && cancel?.reason instanceof AxCancelledError;
  deps.metrics.attemptDuration.observe({ task: node.task, outcome: cancelled ? "cancelled" : outcome }, durationMs / 1000);
  deps.metrics.attempts.inc({ task: node.task, outcome: cancelled ? "cancelled" : outcome });

  if (checked.ok) {
    const result = checked.value as Json;
    if (logInfo) log.info({ outcome, durationMs, outputBytes: jsonBytes(result), summary: summarise(result) }, "attempt finished");
    const failed = { attempt, outcome: "failed" as const, policy: task.options, run, startedAt: started.startedAt, endedAt };
    const recorded = await recordOutcome<Recorded>(
      {
        full: async () => {
          const request = {
            runId,
            nodeKey,
            attempt,
            result,
            downstream: node.downstream,
            continueWith: continuation(deps, dag, node, runId),
            endedAt,
          };
          return {
            kind: "succeeded",
            advanced: await unlessStartLost(
              deps,
              ref,
              started.startedAt,
              () => deps.writes.complete(request),
              (a) => a.applied,
            ),
          };
        },
        short: (why) => writeFailure(deps, dag, node, { ...failed, error: new AxOutcomeNotRecordedError(node.task, attempt, why) }),
        giveUp: () => abandonAttempt(deps.db, { ...ref, worker: deps.workerId }),
      },
      log,
      ended,
    );
    return recorded ? afterRecorded(deps, dag, node, run, attempt, recorded) : undefined;
  }
  const failure = toTaskFailure(checked.error);
  if (cancelled) log.info({ outcome: "cancelled", durationMs }, "attempt finished: its run was cancelled");
  else log.warn({ outcome, durationMs, error: { name: failure.name, message: failure.message } }, "attempt finished");
  if (outcome === "timed_out")
    deps.events.publish({
      ...nodeEvent(deps, "task_timed_out", run, node, attempt),
      error: { name: failure.name, message: failure.message },
    });
  return closeFailedAttempt(
    deps,
    dag,
    node,
    { attempt, error: checked.error, outcome, policy: task.options, run, startedAt: started.startedAt, endedAt },
    ended,
  );
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

/** A log line's glimpse of a result: secret-looking keys masked (see docs/security.md), then cut short. */
export function summarise(value: Json): string {
  const text = JSON.stringify(maskSecrets(value));
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}
