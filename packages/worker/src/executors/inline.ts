import type { AttemptOutcome, Json } from "@ax/store";
import type { AttemptCancel } from "../attempt-cancel.js";
import { runInTaskContext, type TaskContext, withTaskContext } from "../context.js";
import { bindAttemptStore, type AttemptStore } from "../once-scope.js";
import type { CapturedLine } from "../log-capture.js";
import type { RunnableTask } from "../task-definition.js";
import { assertProgress } from "./progress.js";
import { AxHeartbeatLostError, AxTimeoutError } from "@ax/common";

/** A function still running this long after its attempt ended did not stop on its signal. */
const LATE_END_MS = 1000;

export type AttemptResult = { ok: true; value: unknown } | { ok: false; error: unknown; outcome: AttemptOutcome };

export interface AttemptInput {
  task: RunnableTask;
  args: Json[];
  context: Omit<TaskContext, "signal" | "heartbeat">;
  onProgress(progress: Json): void;
  /** A line the task logged in a thread or process child (inline, `context.log` stores its own). */
  onLog(line: CapturedLine): void;
  /** Aborts the attempt from outside (cancel, shutdown). */
  cancel?: AttemptCancel | undefined;
  /** Where the attempt's `ax.once` calls claim their keys. */
  store: AttemptStore;
}

/**
 * Runs the task on this event loop. A timeout or lost heartbeat ends the attempt and frees the
 * slot at once and aborts `signal`, but JavaScript cannot stop a function that ignores its
 * signal: such work keeps running in the background. Use the thread or process executor for
 * code that must really be stopped.
 */
export function executeInline(input: AttemptInput): Promise<AttemptResult> {
  const { task } = input;
  const { timeoutMs, heartbeatTimeoutMs } = task.options;
  // Most tasks never read their signal: it is made on first use, already aborted if the attempt ended.
  let controller: AbortController | undefined;
  let endedBy: Error | undefined;
  let settle!: (result: AttemptResult) => void;
  const finished = new Promise<AttemptResult>((resolve) => (settle = resolve));
  let endedAt = 0;
  const end = (error: Error, outcome: AttemptOutcome) => {
    if (!endedBy) endedAt = performance.now();
    endedBy ??= error;
    // Listeners run inside abort(); a controller exists only once the function read its signal, after `context` is made.
    const made = controller;
    if (made) withTaskContext(context, () => made.abort(error));
    settle({ ok: false, error, outcome });
  };

  const timedOut = () => end(new AxTimeoutError(task.name, timeoutMs!), "timed_out");
  const heartbeatLost = () => end(new AxHeartbeatLostError(task.name, heartbeatTimeoutMs!), "heartbeat_lost");
  const startedAt = performance.now();
  let lastBeatAt = startedAt;
  const timeout = timeoutMs ? setTimeout(timedOut, timeoutMs) : undefined;
  let heartbeat: NodeJS.Timeout | undefined;
  /** Set once the attempt settled: a heartbeat from work left running after it arms nothing. */
  let over = false;
  const armHeartbeat = () => {
    if (!heartbeatTimeoutMs || over) return;
    // A beat after the event loop was blocked past the limit comes too late: the heartbeat was lost.
    if (performance.now() - lastBeatAt >= heartbeatTimeoutMs) {
      heartbeatLost();
      return;
    }
    lastBeatAt = performance.now();
    clearTimeout(heartbeat);
    heartbeat = setTimeout(heartbeatLost, heartbeatTimeoutMs);
  };
  armHeartbeat();
  // A cancel may have landed between the attempt's fence and this call: then this ends the attempt at once.
  const stopCancelling = input.cancel?.onAbort((reason) => end(reason, "failed"));

  const given = input.context;
  // Written out rather than spread: a spread followed by a getter builds the object property by
  // property, about 5 µs an attempt against 0.5 µs for this literal.
  const context: TaskContext = {
    runId: given.runId,
    flow: given.flow,
    task: given.task,
    nodeKey: given.nodeKey,
    attempt: given.attempt,
    idempotencyKey: given.idempotencyKey,
    businessKey: given.businessKey,
    logicalDate: given.logicalDate,
    log: given.log,
    get signal() {
      if (!controller) {
        controller = new AbortController();
        if (endedBy) controller.abort(endedBy);
      }
      return controller.signal;
    },
    heartbeat(progress?: Json) {
      if (progress !== undefined) assertProgress(progress, task.name);
      armHeartbeat();
      if (progress !== undefined) input.onProgress(progress);
    },
  };
  bindAttemptStore(context, input.store);
  // A function that held the event loop past a limit settles before the limit's timer can run:
  // the limit is checked against the clock first, so it ends the attempt all the same.
  const overLimit = () => {
    const now = performance.now();
    if (timeoutMs && now - startedAt >= timeoutMs) timedOut();
    else if (heartbeatTimeoutMs && now - lastBeatAt >= heartbeatTimeoutMs) heartbeatLost();
  };
  // Work that ignored its signal and ends well after its attempt did may have overlapped the next
  // attempt or the dependants: said on stdout, where nothing else would show it. A function that
  // honours the signal stops within moments, and is not named.
  const lateEnd = (how: string) => {
    const lateMs = Math.round(performance.now() - endedAt);
    if (!endedBy || lateMs < LATE_END_MS) return;
    input.context.log.warn(
      { endedBy: endedBy.name, lateMs },
      `the function of attempt ${input.context.attempt} ${how} ${lateMs} ms after the attempt ended (${endedBy.name}): it did not stop on ax.context().signal, so it may have run beside the next attempt or the dependants. Stop on the signal, or use the thread or process executor`,
    );
  };
  // Ended before its function began (a cancel or a hand-back landed during the fence): it never runs.
  if (!endedBy) {
    runInTaskContext(context, () => (task.fn as (...args: Json[]) => unknown)(...input.args)).then(
      (value) => {
        lateEnd("returned");
        overLimit();
        settle({ ok: true, value });
      },
      (error: unknown) => {
        lateEnd("threw");
        overLimit();
        settle({ ok: false, error, outcome: "failed" });
      },
    );
  }

  return finished.finally(() => {
    over = true;
    clearTimeout(timeout);
    clearTimeout(heartbeat);
    stopCancelling?.();
  });
}
