import { setTimeout as sleep } from "node:timers/promises";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { AxTimeoutError } from "@ax/common";
import { AttemptCancel } from "../attempt-cancel.js";
import { taskContextStorage } from "../context.js";
import type { ResolvedTaskOptions, RunnableTask } from "../task-definition.js";
import { executeInline, type AttemptInput } from "./inline.js";

const options: ResolvedTaskOptions = {
  name: "t",
  retries: 0,
  retryBackoffMs: 1000,
  backoff: "exponential",
  jitter: 0,
  maxBackoffMs: 60_000,
  retryOn: null,
  noRetryOn: [],
  timeoutMs: null,
  heartbeatTimeoutMs: null,
  onFailure: "fail",
  concurrency: null,
  rateLimit: null,
  concurrencyKey: null,
  rateLimitKey: null,
  pool: null,
  queue: "default",
  executor: "inline",
  resources: null,
  maxResultBytes: 1024,
  alertGroup: null,
};

function input(fn: () => unknown, overrides: Partial<ResolvedTaskOptions> = {}, cancel?: AttemptCancel): AttemptInput {
  const task: RunnableTask = { name: "t", fn, options: { ...options, ...overrides } };
  return {
    task,
    args: [],
    context: {
      runId: "r",
      flow: "f",
      task: "t",
      nodeKey: "t",
      attempt: 1,
      idempotencyKey: "r:t",
      businessKey: null,
      logicalDate: null,
      log: pino({ level: "silent" }),
    },
    onProgress: () => {},
    onLog: () => {},
    cancel,
    store: { db: undefined as never, workerId: "w" },
  };
}

describe("AttemptCancel", () => {
  it("tells its listener once, at once when it was aborted before the listener came", () => {
    const late = new AttemptCancel();
    expect(late.abort(new Error("first"))).toBe(true);
    expect(late.abort(new Error("second"))).toBe(false);
    const heard: string[] = [];
    late.onAbort((reason) => heard.push(reason.message));
    expect(heard).toEqual(["first"]);

    const early = new AttemptCancel();
    const stop = early.onAbort((reason) => heard.push(reason.message));
    stop();
    expect(early.abort(new Error("after removal"))).toBe(true);
    expect(early.abort(new Error("again"))).toBe(false);
    expect(heard).toEqual(["first"]);
  });
});

describe("executeInline", () => {
  it("a signal first read after the timeout is already aborted with the timeout", async () => {
    let seen: AbortSignal | undefined;
    const result = await executeInline(
      input(
        async () => {
          await sleep(60);
          seen = taskContextStorage.getStore()!.signal;
        },
        { timeoutMs: 10 },
      ),
    );
    expect(result).toMatchObject({ ok: false, outcome: "timed_out" });
    await sleep(100);
    expect(seen?.aborted).toBe(true);
    expect(seen?.reason).toBeInstanceOf(AxTimeoutError);
  });

  it("a signal read while running aborts when the attempt is cancelled", async () => {
    const cancel = new AttemptCancel();
    let seen: AbortSignal | undefined;
    const running = executeInline(
      input(
        async () => {
          seen = taskContextStorage.getStore()!.signal;
          await sleep(5000, undefined, { signal: seen });
        },
        {},
        cancel,
      ),
    );
    await sleep(20);
    cancel.abort(new Error("run cancelled"));
    const result = await running;
    expect(result).toMatchObject({ ok: false, outcome: "failed", error: { message: "run cancelled" } });
    expect(seen?.aborted).toBe(true);
  });

  it("an attempt cancelled before it started ends at once", async () => {
    const cancel = new AttemptCancel();
    cancel.abort(new Error("cancelled early"));
    const result = await executeInline(input(() => sleep(300), {}, cancel));
    expect(result).toMatchObject({ ok: false, error: { message: "cancelled early" } });
  });
});
