import { fork } from "node:child_process";
import type { Socket } from "node:net";
import { fileURLToPath } from "node:url";
import type { ChildEvent, ChildExit, ChildPool, IsolatedChild } from "./child-pool.js";
import { procCpuMs } from "./cpu-time.js";
import { procRssMb } from "./memory.js";
import type { AttemptInput, AttemptResult } from "./inline.js";
import type { ChildMessage } from "./protocol.js";
import { runIsolated } from "./run-isolated.js";

const BOOT = fileURLToPath(new URL("./isolated-boot.mjs", import.meta.url));
const STDERR_TAIL = 4096;
/** What V8 prints when a heap cap is hit, before it aborts the process. */
const OUT_OF_MEMORY = /heap out of memory|Reached heap limit/i;
/** Where that report starts. */
const V8_DUMP = /\n?<--- Last few GCs --->|FATAL ERROR: (?:Reached heap limit|.*heap out of memory)/;
/** Export conditions the parent resolves packages with (`development` in the repository): the child must load the same files. */
const CONDITIONS = conditionArgs(process.execArgv);

/** The export condition flags among node's options, in each form node takes: `--conditions=x`, `--conditions x`, `-C x`. */
export function conditionArgs(execArgv: readonly string[]): string[] {
  const found: string[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const arg = execArgv[i]!;
    if (arg.startsWith("--conditions=") || arg.startsWith("-C=")) found.push(arg);
    else if ((arg === "--conditions" || arg === "-C") && i + 1 < execArgv.length) found.push(arg, execArgv[++i]!);
  }
  return found;
}

/**
 * A child process with its V8 heap capped by `--max-old-space-size` (runIsolated watches the rest
 * of its memory, `rssMb`). Its stderr is passed on to
 * ours (up to V8's out-of-memory report) and its tail kept, to tell an out-of-memory abort from
 * another death.
 */
export function spawnProcess(memoryMb: number | undefined): IsolatedChild {
  const child = fork(BOOT, [], {
    execArgv: memoryMb ? [...CONDITIONS, `--max-old-space-size=${memoryMb}`] : CONDITIONS,
    // Structured clone, as for threads: results keep their types until checkResult judges them.
    serialization: "advanced",
    stdio: ["ignore", "inherit", "pipe", "ipc"],
    // A process group of its own: the worker alone decides when its child stops. Ctrl-C, systemd's
    // control-group stop and an init that signals the whole group would otherwise end the child at
    // once, failing an attempt the worker's stop lets finish or hands back. A worker that dies
    // closes the IPC channel, and the child exits on that.
    detached: true,
  });
  const listeners = new Set<(event: ChildEvent) => void>();
  const emit = (event: ChildEvent) => {
    for (const listener of listeners) listener(event);
  };
  let alive = true;
  let stderrTail = "";
  let spawnError: Error | undefined;
  let markReady!: () => void;
  let notReady!: (error: Error) => void;
  const ready = new Promise<void>((resolve, reject) => {
    markReady = resolve;
    notReady = reject;
  });
  ready.catch(() => {});

  let dumping = false;
  child.stderr?.on("data", (chunk: Buffer) => {
    // V8's report of a heap cap hit (its last GCs and native stack, some twenty plain lines) is
    // kept out of the worker's log: the attempt's error says which limit it was.
    const text = chunk.toString("utf8");
    if (!dumping) {
      const at = text.search(V8_DUMP);
      if (at === -1) process.stderr.write(chunk);
      else {
        dumping = true;
        if (at > 0) process.stderr.write(text.slice(0, at));
      }
    }
    stderrTail = (stderrTail + text).slice(-STDERR_TAIL);
  });
  child.on("message", (message: ChildMessage) => {
    if (message.type === "ready") markReady();
    emit(message);
  });
  // Spawn failures and sends to a child that just died; "close" below reports the death itself.
  child.on("error", (error) => (spawnError ??= error));
  const exited = new Promise<ChildExit>((resolve) => {
    // "close" (not "exit") waits for stderr to drain, so the out-of-memory message is in the tail.
    child.once("close", (code, signal) => {
      alive = false;
      const exit: ChildExit = {
        outOfMemory: OUT_OF_MEMORY.test(stderrTail),
        error: spawnError,
        description: signal ? `signal ${signal}` : `exit code ${code}`,
      };
      emit({ type: "exit", exit });
      notReady(new Error(`child process exited before it was ready (${exit.description})`));
      resolve(exit);
    });
  });

  const hold = (busy: boolean) => {
    // A piped stdio stream is a socket, though typed as a plain Readable.
    for (const handle of [child, child.channel, child.stderr as Socket | null]) {
      if (handle) busy ? handle.ref() : handle.unref();
    }
  };
  return {
    kind: "process",
    ready,
    exited,
    get alive() {
      return alive;
    },
    send(message) {
      if (alive && child.connected) child.send(message);
    },
    listen(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    cpuMs: () => (child.pid ? procCpuMs(`/proc/${child.pid}/stat`) : null),
    rssMb: () => (child.pid ? procRssMb(`/proc/${child.pid}/status`) : null),
    async kill() {
      if (alive) child.kill("SIGKILL");
      await exited;
    },
    hold,
  };
}

/** Runs the attempt in a child process; timeout, lost heartbeat, cancel and the CPU and memory caps SIGKILL it. */
export function executeProcess(input: AttemptInput, pool: ChildPool): Promise<AttemptResult> {
  return runIsolated(input, { kind: "process", pool, spawn: spawnProcess });
}
