import { Worker } from "node:worker_threads";
import type { ChildEvent, ChildExit, ChildPool, IsolatedChild } from "./child-pool.js";
import { procCpuMs } from "./cpu-time.js";
import type { AttemptInput, AttemptResult } from "./inline.js";
import type { ChildMessage } from "./protocol.js";
import { runIsolated } from "./run-isolated.js";

const BOOT = new URL("./isolated-boot.mjs", import.meta.url);

/**
 * A worker thread whose V8 heap is capped by `resourceLimits`. Its Buffers and native memory are
 * the worker process's own and cannot be told apart, so they are not capped.
 */
export function spawnThread(memoryMb: number | undefined): IsolatedChild {
  const worker = new Worker(BOOT, {
    resourceLimits: memoryMb ? { maxOldGenerationSizeMb: memoryMb } : {},
  });
  const listeners = new Set<(event: ChildEvent) => void>();
  const emit = (event: ChildEvent) => {
    for (const listener of listeners) listener(event);
  };
  let alive = true;
  let statPath: string | null = null;
  let lastError: Error | undefined;
  let markReady!: () => void;
  let notReady!: (error: Error) => void;
  const ready = new Promise<void>((resolve, reject) => {
    markReady = resolve;
    notReady = reject;
  });
  ready.catch(() => {});

  worker.on("message", (message: ChildMessage) => {
    if (message.type === "ready") {
      statPath = message.threadPath ? `/proc/${message.threadPath}/stat` : null;
      markReady();
    }
    emit(message);
  });
  worker.on("error", (error) => (lastError = error));
  const exited = new Promise<ChildExit>((resolve) => {
    worker.once("exit", (code) => {
      alive = false;
      const outOfMemory = (lastError as { code?: string } | undefined)?.code === "ERR_WORKER_OUT_OF_MEMORY";
      const exit: ChildExit = { outOfMemory, error: outOfMemory ? undefined : lastError, description: `exit code ${code}` };
      emit({ type: "exit", exit });
      notReady(new Error(`worker thread exited before it was ready (${exit.description})`));
      resolve(exit);
    });
  });

  return {
    kind: "thread",
    ready,
    exited,
    get alive() {
      return alive;
    },
    send: (message) => worker.postMessage(message),
    listen(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    cpuMs: () => (statPath ? procCpuMs(statPath) : null),
    rssMb: () => null,
    async kill() {
      // terminate() halts the thread's JavaScript at once (V8 TerminateExecution); freeing its
      // heap can take a second on a busy machine, and the attempt need not wait for that.
      void worker.terminate();
    },
    hold: (busy) => (busy ? worker.ref() : worker.unref()),
  };
}

/** Runs the attempt in a worker thread; timeout, lost heartbeat and cancel `terminate()` it. */
export function executeThread(input: AttemptInput, pool: ChildPool): Promise<AttemptResult> {
  return runIsolated(input, { kind: "thread", pool, spawn: spawnThread });
}
