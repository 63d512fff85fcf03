import { setTimeout as sleep } from "node:timers/promises";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { AxNotJsonError, AxTimeoutError } from "@ax/common";
import type { Json } from "@ax/store";
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

  it("heartbeat(progress) throws AxNotJsonError for progress it could not store, and keeps only the storable", async () => {
    const stored: Json[] = [];
    const refused: AxNotJsonError[] = [];
    const beat = (progress: unknown) => {
      try {
        taskContextStorage.getStore()!.heartbeat(progress as Json);
      } catch (error) {
        refused.push(error as AxNotJsonError);
      }
    };
    const result = await executeInline({
      ...input(() => {
        beat({ i: 1n });
        beat({ s: "a\u0000b" });
        beat(["\ud83d"]);
        beat({ at: new Map() });
        beat({ i: 1, s: "ok 🚀" });
        return "done";
      }),
      onProgress: (progress) => stored.push(progress),
    });
    expect(result).toEqual({ ok: true, value: "done" });
    expect(stored).toEqual([{ i: 1, s: "ok 🚀" }]);
    expect(refused.map((error) => [error.name, error.path])).toEqual([
      ["AxNotJsonError", "$.i"],
      ["AxNotJsonError", "$.s"],
      ["AxNotJsonError", "$[0]"],
      ["AxNotJsonError", "$.at"],
    ]);
    expect(refused[0]!).toBeInstanceOf(AxNotJsonError);
    expect(refused[0]!.message).toMatch(/^heartbeat progress of task "t" is not plain JSON: \$\.i is a BigInt \(convert it to a string\)/);
    expect(refused[1]!.message).toMatch(/^heartbeat progress of task "t" cannot be stored in PostgreSQL: \$\.s contains a NUL character/);
  });

  it("a refused heartbeat keeps nothing alive: only storable beats hold off heartbeatTimeout", async () => {
    // Beats every 20 ms for twice the heartbeatTimeout: refused beats alone leave it unbeaten.
    // The storable beats get a timeout of 750 ms, so that a loaded machine must stall this test's
    // thread for over 700 ms to end the attempt (CI once saw a stall past 230 ms).
    const beating = (progress: unknown, timeoutMs: number) => async () => {
      for (let i = 0; i < (2 * timeoutMs) / 20; i++) {
        try {
          taskContextStorage.getStore()!.heartbeat(progress as Json);
        } catch {
          // The task carries on as one that ignores the refusal would.
        }
        await sleep(20);
      }
      return "done";
    };
    expect(await executeInline(input(beating({ i: 1n }, 250), { heartbeatTimeoutMs: 250 }))).toMatchObject({
      ok: false,
      outcome: "heartbeat_lost",
    });
    expect(await executeInline(input(beating({ i: 1 }, 750), { heartbeatTimeoutMs: 750 }))).toEqual({ ok: true, value: "done" });
  });

  it("an attempt cancelled before it started ends at once, and its function never runs", async () => {
    const cancel = new AttemptCancel();
    cancel.abort(new Error("cancelled early"));
    let ran = false;
    const result = await executeInline(
      input(
        () => {
          ran = true;
          return sleep(300);
        },
        {},
        cancel,
      ),
    );
    expect(result).toMatchObject({ ok: false, error: { message: "cancelled early" } });
    expect(ran).toBe(false);
  });

  it("a function that blocks the event loop past timeout or heartbeatTimeout ends its attempt all the same", async () => {
    const busy = (ms: number) => () => {
      const until = performance.now() + ms;
      while (performance.now() < until);
      return "late";
    };
    const asyncBusy = (ms: number) => async () => busy(ms)();
    expect(await executeInline(input(busy(150), { timeoutMs: 50 }))).toMatchObject({ ok: false, outcome: "timed_out" });
    expect(await executeInline(input(asyncBusy(150), { timeoutMs: 50 }))).toMatchObject({ ok: false, outcome: "timed_out" });
    expect(await executeInline(input(busy(150), { heartbeatTimeoutMs: 50 }))).toMatchObject({ ok: false, outcome: "heartbeat_lost" });
    expect(await executeInline(input(busy(20), { timeoutMs: 2000, heartbeatTimeoutMs: 2000 }))).toEqual({ ok: true, value: "late" });
    // A heartbeat after the loop was blocked past heartbeatTimeout does not bring the attempt back.
    const beatLate = () => {
      busy(150)();
      taskContextStorage.getStore()!.heartbeat();
      return "beat";
    };
    expect(await executeInline(input(beatLate, { heartbeatTimeoutMs: 50 }))).toMatchObject({ ok: false, outcome: "heartbeat_lost" });
  });

  it("says on the attempt's log when a function that ignored its signal ends long after its attempt; one that stops on it is not named", async () => {
    const lines: { msg: string; lateMs?: number }[] = [];
    const log = pino({ level: "warn" }, { write: (line: string) => lines.push(JSON.parse(line)) });
    const withLog = (fn: () => unknown, overrides: Partial<ResolvedTaskOptions>) => ({
      ...input(fn, overrides),
      context: { ...input(fn).context, log },
    });
    let finished!: () => void;
    const ignored = new Promise<void>((resolve) => (finished = resolve));
    const stubborn = async () => {
      await sleep(1200);
      finished();
      return "late";
    };
    expect(await executeInline(withLog(stubborn, { timeoutMs: 50 }))).toMatchObject({ ok: false, outcome: "timed_out" });
    await ignored;
    await sleep(10);
    expect(lines).toHaveLength(1);
    expect(lines[0]!.msg).toMatch(
      /^the function of attempt 1 returned \d+ ms after the attempt ended \(AxTimeoutError\): it did not stop on ax\.context\(\)\.signal/,
    );
    expect(lines[0]!.lateMs).toBeGreaterThanOrEqual(1000);
    const polite = () => sleep(5000, undefined, { signal: taskContextStorage.getStore()!.signal });
    expect(await executeInline(withLog(polite, { timeoutMs: 50 }))).toMatchObject({ ok: false, outcome: "timed_out" });
    await sleep(50);
    expect(lines).toHaveLength(1);
  });
});
