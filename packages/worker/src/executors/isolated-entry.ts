import { readlinkSync } from "node:fs";
import { parentPort } from "node:worker_threads";
import pino, { type Logger } from "pino";
import { assertJson, type Json } from "@ax/store";
import { runInTaskContext, type TaskContext } from "../context.js";
import { findTaskDefinition } from "../defined-tasks.js";
import { capturingLogger } from "../log-capture.js";
import { withOnceGate } from "../once-scope.js";
import { markExecutorChild } from "./child-marker.js";
import { ParentOnceGate } from "./once-channel.js";
import { assertProgress } from "./progress.js";
import { serialiseError, type ChildMessage, type ParentMessage, type RunMessage } from "./protocol.js";
import { AxExecutorError, loadModule } from "@ax/common";

/**
 * Runs inside a worker thread or a child process, one attempt at a time: imports the module
 * that defined the task (which registers it), runs it under an `ax.context()` of its own and
 * reports heartbeats and the outcome to the parent. The parent enforces timeouts and limits by
 * stopping this thread or process, so nothing here aborts `signal`; it also holds the database,
 * so `ax.once` asks it to claim and store keys.
 */

function send(message: ChildMessage, then?: () => void): void {
  if (parentPort) {
    parentPort.postMessage(message);
    then?.();
  } else {
    process.send?.(message, undefined, {}, () => then?.());
  }
}

function threadPath(): string | null {
  try {
    return readlinkSync("/proc/thread-self");
  } catch {
    return null;
  }
}

const onceGate = new ParentOnceGate(send);

let baseLogger: Logger | undefined;
function loggerFor(log: RunMessage["log"]): Logger {
  baseLogger ??= pino({ level: log.level });
  return baseLogger.child(log.bindings);
}

/**
 * Sends the result as JSON.stringify writes it, checked as an inline task's is: structured cloning
 * alone would turn a class instance into its fields, where inline a `toJSON` (or a refusal) decides.
 */
function sendResult(value: unknown, task: string, ranMs: number): void {
  try {
    if (value !== undefined) assertJson(value, `result of task "${task}"`);
    send({ type: "result", value: value === undefined ? undefined : (JSON.parse(JSON.stringify(value)) as Json), ranMs });
  } catch (error) {
    send({ type: "error", error: serialiseError(error), ranMs });
  }
}

async function run(message: RunMessage): Promise<void> {
  let startedAt: number | undefined;
  // Set once the function settled: a timer it left behind that still holds its context must not
  // beat or log for the next attempt this child runs (the parent cannot tell their messages apart).
  let over = false;
  try {
    await loadModule(message.moduleUrl);
    const fn = findTaskDefinition(message.task, message.moduleUrl);
    if (!fn) {
      throw new AxExecutorError(
        `task "${message.task}" was not defined when ${message.moduleUrl} was loaded in a ${parentPort ? "worker thread" : "child process"}; define it with ax.task() at the top level of that module.`,
      );
    }
    const context: TaskContext = {
      ...message.context,
      signal: new AbortController().signal,
      heartbeat(progress?: Json) {
        if (progress !== undefined) assertProgress(progress, message.task);
        if (over) return;
        send(progress === undefined ? { type: "heartbeat" } : { type: "heartbeat", progress });
      },
      log: capturingLogger(loggerFor(message.log), (line) => {
        if (!over) send({ type: "log", line });
      }),
    };
    send({ type: "started" });
    startedAt = performance.now();
    const value = await withOnceGate(onceGate, () =>
      runInTaskContext(context, () => (fn as (...args: Json[]) => unknown)(...message.args)),
    ).finally(() => (over = true));
    sendResult(value, message.task, performance.now() - startedAt);
  } catch (error) {
    send({ type: "error", error: serialiseError(error), ...(startedAt === undefined ? {} : { ranMs: performance.now() - startedAt }) });
  }
}

// Work the task left behind (a timer that throws, a promise nobody awaits) fails the attempt by
// its own error; this thread or process is then not reused.
function fatal(error: unknown): void {
  send({ type: "error", error: serialiseError(error), fatal: true }, () => process.exit(1));
}
process.on("uncaughtException", fatal);
process.on("unhandledRejection", fatal);

markExecutorChild();
const onMessage = (message: ParentMessage) => {
  if (message.type === "once-reply") onceGate.answered(message.id, message);
  else void run(message);
};
if (parentPort) {
  parentPort.on("message", onMessage);
} else {
  process.on("message", onMessage);
  process.on("disconnect", () => process.exit(0));
}
send({ type: "ready", threadPath: threadPath() });
