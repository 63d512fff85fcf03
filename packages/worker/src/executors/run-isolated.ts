import type { AttemptOutcome } from "@ax/store";
import type { ChildEvent, ChildExit, ChildPool, IsolatedChild } from "./child-pool.js";
import type { AttemptInput, AttemptResult } from "./inline.js";
import { AxMemoryLimitError } from "./memory.js";
import { OnceHost } from "./once-host.js";
import { reviveError } from "./protocol.js";
import { AxExecutorError, AxHeartbeatLostError, AxResourceLimitError, AxTimeoutError } from "@ax/common";

/**
 * A cold child must load tsx, the task's module and the SDK it imports before the attempt's
 * clocks start; this bounds that, so a module that never finishes loading cannot hold a slot.
 */
const STARTUP_LIMIT_MS = 60_000;
const CPU_POLL_MS = 100;
/** Reading /proc/<pid>/status costs microseconds; a task allocating 1 GB/s overshoots by ~200 MB before it is stopped. */
const MEMORY_POLL_MS = 200;

export interface IsolatedExecutor {
  kind: "thread" | "process";
  pool: ChildPool;
  spawn(memoryMb: number | undefined): IsolatedChild;
}

function exitError(task: string, kind: string, memoryMb: number | undefined, exit: ChildExit): Error {
  if (exit.outOfMemory) {
    return new AxResourceLimitError(task, "memory", memoryMb ? `${memoryMb} MB` : "the default heap limit");
  }
  if (exit.error) return exit.error;
  return new AxExecutorError(`the ${kind} running task "${task}" ended during the attempt (${exit.description}); see the worker's stderr.`);
}

/**
 * Runs one attempt in a thread or process child. Timeout, lost heartbeat, cancel and the CPU cap
 * stop the child itself (its code cannot ignore that); the clocks start when the task's function
 * is called in the child, so a cold start does not count against `timeout`.
 */
export async function runIsolated(input: AttemptInput, executor: IsolatedExecutor): Promise<AttemptResult> {
  const { task } = input;
  const { timeoutMs, heartbeatTimeoutMs, resources } = task.options;
  const memoryMb = resources?.memoryMb;
  const cpuLimitMs = resources?.cpuSeconds ? resources.cpuSeconds * 1000 : null;
  if (!task.moduleUrl) {
    const error = new AxExecutorError(
      `task "${task.name}" uses executor "${executor.kind}" but the module that defined it is unknown; define it with ax.task() at the top level of a module file.`,
    );
    return { ok: false, error, outcome: "failed" };
  }

  let first: { result: AttemptResult; keepChild: boolean } | undefined;
  let settle!: () => void;
  const settled = new Promise<void>((resolve) => (settle = resolve));
  const end = (result: AttemptResult, keepChild = false) => {
    if (first) return;
    first = { result, keepChild };
    settle();
  };
  const fail = (error: unknown, outcome: AttemptOutcome = "failed") => end({ ok: false, error, outcome });

  const timers: NodeJS.Timeout[] = [];
  let heartbeat: NodeJS.Timeout | undefined;
  const armHeartbeat = () => {
    if (!heartbeatTimeoutMs) return;
    clearTimeout(heartbeat);
    heartbeat = setTimeout(() => fail(new AxHeartbeatLostError(task.name, heartbeatTimeoutMs), "heartbeat_lost"), heartbeatTimeoutMs);
  };
  const stopCancelling = input.cancel?.onAbort((reason) => fail(reason));
  timers.push(
    setTimeout(
      () =>
        fail(
          new AxExecutorError(
            `task "${task.name}" did not start within ${STARTUP_LIMIT_MS} ms in a ${executor.kind}: its module is too slow to load or hangs while loading. ` +
              "Move slow setup from the module's top level into the task function (this bound on loading is apart from the task's timeout).",
          ),
        ),
      STARTUP_LIMIT_MS,
    ),
  );

  const { log, ...identity } = input.context;
  const once = new OnceHost(input.store, identity);
  const key = `${executor.kind}|${task.moduleUrl}|${memoryMb ?? ""}`;
  const child = first ? undefined : (executor.pool.take(key) ?? executor.spawn(memoryMb));
  const started = (c: IsolatedChild) => {
    clearTimeout(timers[0]);
    if (timeoutMs) timers.push(setTimeout(() => fail(new AxTimeoutError(task.name, timeoutMs), "timed_out"), timeoutMs));
    armHeartbeat();
    if (cpuLimitMs) timers.push(watchCpu(c, cpuLimitMs, () => fail(new AxResourceLimitError(task.name, "cpu", `${cpuLimitMs / 1000} s`))));
    if (memoryMb) {
      const watch = watchMemory(c, memoryMb, (usedMb) => fail(new AxMemoryLimitError(task.name, usedMb, memoryMb)));
      if (watch) timers.push(watch);
    }
  };
  const overTimeout = (ranMs: number | undefined) => timeoutMs !== null && ranMs !== undefined && ranMs > timeoutMs;
  /** The task's module loaded and its function began: only such a child is kept warm after an error. */
  let began = false;
  const onEvent = (event: ChildEvent) => {
    if (event.type === "started") {
      began = true;
      started(child!);
    } else if (event.type === "heartbeat") {
      armHeartbeat();
      if (event.progress !== undefined) input.onProgress(event.progress);
    } else if (event.type === "log") input.onLog(event.line);
    else if (event.type === "once") {
      void once.answer(event.request).then((answer) => {
        // After the attempt ended the child is stopped or idle: nothing there awaits the answer.
        if (!first) child!.send({ type: "once-reply", id: event.id, ...answer });
      });
    } else if ((event.type === "result" || event.type === "error") && overTimeout(event.ranMs)) {
      // The timer did not fire in time (this event loop was held up): the answer came late all the same.
      fail(new AxTimeoutError(task.name, timeoutMs as number), "timed_out");
    } else if (event.type === "result") end({ ok: true, value: event.value }, true);
    // A module whose evaluation threw stays failed in that child's module cache: retried there, it would throw again.
    else if (event.type === "error") end({ ok: false, error: reviveError(event.error), outcome: "failed" }, began && !event.fatal);
    else if (event.type === "exit") fail(exitError(task.name, executor.kind, memoryMb, event.exit));
  };

  const stopListening = child?.listen(onEvent);
  if (child) await Promise.race([child.ready.catch(() => {}), settled]);
  if (child && !first) {
    child.send({
      type: "run",
      moduleUrl: task.moduleUrl,
      task: task.name,
      args: input.args,
      context: identity,
      log: { level: log.level, bindings: log.bindings() },
    });
  }

  await settled;
  for (const timer of timers) clearTimeout(timer);
  clearTimeout(heartbeat);
  stopListening?.();
  stopCancelling?.();
  if (child) {
    if (first!.keepChild) executor.pool.give(key, child);
    else await child.kill();
  }
  // Only once the child's code can no longer run may its keys go to the next attempt.
  await once.close();
  return first!.result;
}

/** Calls `exceeded` once the child has used more than `limitMs` of CPU since now. */
function watchCpu(child: IsolatedChild, limitMs: number, exceeded: () => void): NodeJS.Timeout {
  // Without /proc, wall time stands in for CPU time: never less than what one JS thread burns.
  const t0 = performance.now();
  const base = child.cpuMs();
  return setInterval(() => {
    const now = child.cpuMs();
    const used = base === null || now === null ? performance.now() - t0 : now - base;
    if (used > limitMs) exceeded();
  }, CPU_POLL_MS);
}

/**
 * Calls `exceeded` once the child holds more than `limitMb` beyond what it held when `fn` was
 * called. Counted from then, like cpuSeconds: the runtime, TypeScript support and the task's
 * imports a warm child already holds (100 MB and more) are not the attempt's. Null for a thread
 * or without /proc: only the heap cap applies.
 */
function watchMemory(child: IsolatedChild, limitMb: number, exceeded: (usedMb: number) => void): NodeJS.Timeout | null {
  const base = child.rssMb();
  if (base === null) return null;
  return setInterval(() => {
    const now = child.rssMb();
    if (now !== null && now - base > limitMb) exceeded(now - base);
  }, MEMORY_POLL_MS);
}
