import type { AttemptOutcome, Json } from "@ax/store";
import { runInTaskContext, type TaskContext } from "../context.js";
import { bindAttemptStore, type AttemptStore } from "../once-scope.js";
import type { CapturedLine } from "../log-capture.js";
import type { RunnableTask } from "../task-definition.js";
import { AxHeartbeatLostError, AxTimeoutError } from "@ax/common";

export type AttemptResult = { ok: true; value: unknown } | { ok: false; error: unknown; outcome: AttemptOutcome };

export interface AttemptInput {
  task: RunnableTask;
  args: Json[];
  context: Omit<TaskContext, "signal" | "heartbeat">;
  onProgress(progress: Json): void;
  /** A line the task logged in a thread or process child (inline, `context.log` stores its own). */
  onLog(line: CapturedLine): void;
  /** Aborts the attempt from outside (cancel, shutdown). */
  cancel?: AbortSignal | undefined;
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
  const controller = new AbortController();
  let settle!: (result: AttemptResult) => void;
  const finished = new Promise<AttemptResult>((resolve) => (settle = resolve));
  const end = (error: Error, outcome: AttemptOutcome) => {
    controller.abort(error);
    settle({ ok: false, error, outcome });
  };

  const timeout = timeoutMs ? setTimeout(() => end(new AxTimeoutError(task.name, timeoutMs), "timed_out"), timeoutMs) : undefined;
  let heartbeat: NodeJS.Timeout | undefined;
  const armHeartbeat = () => {
    if (!heartbeatTimeoutMs) return;
    clearTimeout(heartbeat);
    heartbeat = setTimeout(() => end(new AxHeartbeatLostError(task.name, heartbeatTimeoutMs), "heartbeat_lost"), heartbeatTimeoutMs);
  };
  armHeartbeat();
  const onCancel = () => end(input.cancel?.reason instanceof Error ? input.cancel.reason : new Error("attempt cancelled"), "failed");
  input.cancel?.addEventListener("abort", onCancel, { once: true });
  // A cancel may land between the attempt's fence and this call: "abort" will not fire again.
  if (input.cancel?.aborted) onCancel();

  const context: TaskContext = {
    ...input.context,
    signal: controller.signal,
    heartbeat(progress?: Json) {
      armHeartbeat();
      if (progress !== undefined) input.onProgress(progress);
    },
  };
  bindAttemptStore(context, input.store);
  runInTaskContext(context, () => (task.fn as (...args: Json[]) => unknown)(...input.args)).then(
    (value) => settle({ ok: true, value }),
    (error: unknown) => settle({ ok: false, error, outcome: "failed" }),
  );

  return finished.finally(() => {
    clearTimeout(timeout);
    clearTimeout(heartbeat);
    input.cancel?.removeEventListener("abort", onCancel);
  });
}
