import { describe, expect, it } from "vitest";
import type { RunInfo, TaskRunInfo } from "ax-scheduler";
import { elapsed } from "@ax/common";
import { renderRun } from "./render-run.js";

const plain = (text: string) => text.replace(/\u001b\[[0-9;]*m/g, "");
const at = (ms: number) => new Date(Date.UTC(2026, 11, 1, 12, 0, 0, ms)).toISOString();

function node(overrides: Partial<TaskRunInfo>): TaskRunInfo {
  return {
    key: "create_invoice",
    task: "create_invoice",
    queue: "default",
    upstream: [],
    status: "success",
    attempts: [],
    result: null,
    error: null,
    progress: null,
    nextRetryAt: null,
    startedAt: at(0),
    finishedAt: at(900),
    reusedFrom: null,
    waitingFor: null,
    ...overrides,
  };
}

function run(tasks: TaskRunInfo[]): RunInfo {
  return {
    id: "0b5c1f5e-4a43-4a52-9d1e-3d2b1a0c9f11",
    flow: "order_payment_flow",
    flowVersion: 1,
    status: "success",
    trigger: "manual",
    payload: null,
    businessKey: null,
    idempotencyKey: null,
    logicalDate: null,
    rerunOf: null,
    priority: null,
    runAt: null,
    createdAt: at(0),
    startedAt: at(0),
    finishedAt: at(900),
    waitingFor: null,
    tasks,
  };
}

describe("renderRun", () => {
  it("lists each attempt of a retried node with how it ended, so a success after retries still says why it was retried", () => {
    const text = plain(
      renderRun(
        run([
          node({
            attempts: [
              {
                n: 1,
                worker: "w1",
                startedAt: at(0),
                finishedAt: at(35),
                outcome: "failed",
                error: { name: "InvoiceApiError", message: "invoice service unavailable\nsecond line", stack: null },
                workerSilentMs: null,
              },
              { n: 2, worker: "w1", startedAt: at(800), finishedAt: at(900), outcome: "success", error: null, workerSilentMs: null },
            ],
          }),
        ]),
      ),
    );
    expect(text).toMatch(/attempt 1 failed +35ms +InvoiceApiError: invoice service unavailable\n/);
    expect(text).toMatch(/attempt 2 success +100ms/);
    expect(text).not.toContain("second line");
  });

  it("does not print a running node's previous error under its new attempt: the attempt's own line keeps it", () => {
    const crashed = {
      name: "AxWorkerCrashedError",
      message: "worker w1 stopped heartbeating",
      stack: null,
      notRetried: null,
      notifyOnly: false,
    };
    const text = plain(
      renderRun(
        run([
          node({
            status: "running",
            finishedAt: null,
            error: crashed,
            attempts: [
              { n: 1, worker: "w1", startedAt: at(0), finishedAt: at(35), outcome: "crashed", error: crashed, workerSilentMs: null },
              { n: 2, worker: "w2", startedAt: at(800), finishedAt: null, outcome: null, error: null, workerSilentMs: 0 },
            ],
          }),
        ]),
        new Date(Date.parse(at(900))),
      ),
    );
    expect(text).toMatch(/attempt 1 crashed +35ms +AxWorkerCrashedError: worker w1 stopped heartbeating\n/);
    expect(text).toMatch(/attempt 2 running/);
    expect(text.match(/AxWorkerCrashedError/g)).toHaveLength(1);
  });

  it("says a notify_only node's failure does not decide the run", () => {
    const failed = node({
      key: "send_notification",
      status: "failed",
      error: { name: "SmtpError", message: "relay refused", stack: null, notRetried: "no retries left (retries: 0)", notifyOnly: true },
    });
    const text = plain(renderRun(run([failed])));
    expect(text).toContain("      not retried: no retries left (retries: 0)\n      notify_only: the run's outcome ignores this failure");
  });

  it("shows how far a failed node got (its last progress), and no progress for a success", () => {
    const lost = node({
      status: "failed",
      progress: { step: 2 },
      error: { name: "AxHeartbeatLostError", message: "no heartbeat for 1s", stack: null, notRetried: null, notifyOnly: false },
    });
    const done = node({ key: "send_notification", progress: { step: 9 } });
    const text = plain(renderRun(run([lost, done])));
    expect(text).toContain('      last progress {"step":2}\n      AxHeartbeatLostError: no heartbeat for 1s');
    expect(text).not.toContain('{"step":9}');
  });

  it("says for how long, on which worker and since when a running node runs, and for how long the run has", () => {
    const running = node({
      status: "running",
      finishedAt: null,
      attempts: [{ n: 1, worker: "vm-1-abc", startedAt: at(0), finishedAt: null, outcome: null, error: null, workerSilentMs: null }],
    });
    const text = plain(renderRun({ ...run([running]), status: "running", finishedAt: null }, new Date(Date.parse(at(0)) + 25_300)));
    expect(text).toContain("running for 25.3s on vm-1-abc (attempt 1, since 2026-12-01T12:00:00.000Z)");
    expect(text).toMatch(/trigger manual {2}running for 25\.3s/);
  });

  it("keeps a node run once to its one line", () => {
    const text = plain(
      renderRun(
        run([
          node({
            attempts: [{ n: 1, worker: "w1", startedAt: at(0), finishedAt: at(5), outcome: "success", error: null, workerSilentMs: null }],
          }),
        ]),
      ),
    );
    expect(text).toContain("1 attempt ");
    expect(text).not.toContain("attempt 1");
  });

  it("names a single attempt's outcome when it says more than the node's status (timed_out)", () => {
    const timedOut = node({
      status: "failed",
      attempts: [
        {
          n: 1,
          worker: "w1",
          startedAt: at(0),
          finishedAt: at(1000),
          outcome: "timed_out",
          error: { name: "AxTimeoutError", message: "timed out", stack: null },
          workerSilentMs: null,
        },
      ],
    });
    expect(plain(renderRun(run([timedOut])))).toContain("\n      attempt 1 timed_out");
  });

  it("reads took from the run's start: a delayed run's wait is said apart", () => {
    const delayed = { ...run([node({})]), createdAt: at(0), startedAt: at(19_900), finishedAt: at(19_915) };
    expect(plain(renderRun(delayed))).toContain("took 15ms (started 19.9s after it was triggered)");
    expect(plain(renderRun(run([node({})])))).toMatch(/took 900ms$/m);
  });

  it("says a run cancelled before any node started, or not started yet, in words rather than a dash", () => {
    const cancelled = {
      ...run([node({ status: "cancelled", startedAt: null })]),
      status: "cancelled" as const,
      startedAt: null,
      finishedAt: at(500),
    };
    expect(plain(renderRun(cancelled))).toMatch(/trigger manual {2}cancelled before it started$/m);
    const waiting = {
      ...run([node({ status: "queued", startedAt: null, finishedAt: null })]),
      status: "pending" as const,
      startedAt: null,
      finishedAt: null,
    };
    expect(plain(renderRun(waiting))).toMatch(/trigger manual {2}not started yet$/m);
  });

  it("prints a minute or more in whole units, not in raw seconds", () => {
    expect(elapsed(639)).toBe("639ms");
    expect(elapsed(12_000)).toBe("12.0s");
    expect(elapsed(59_940)).toBe("59.9s");
    expect(elapsed(59_960)).toBe("1m 0s");
    expect(elapsed(754_400)).toBe("12m 34s");
    expect(elapsed(7_222_200)).toBe("2h 0m 22s");
    expect(elapsed(172_824_500)).toBe("2d 0h 0m");
    expect(elapsed(93_784_000)).toBe("1d 2h 3m");
  });

  it("says how long a node has run for in hours once it passes them", () => {
    const running = node({
      status: "running",
      finishedAt: null,
      attempts: [{ n: 1, worker: "vm-1-abc", startedAt: at(0), finishedAt: null, outcome: null, error: null, workerSilentMs: null }],
    });
    const text = plain(renderRun({ ...run([running]), status: "running", finishedAt: null }, new Date(Date.parse(at(0)) + 7_222_200)));
    expect(text).toContain("running for 2h 0m 22s on vm-1-abc");
    expect(text).toMatch(/trigger manual {2}running for 2h 0m 22s/);
  });

  it("says when a running attempt's worker has gone silent: past its lease it is presumed crashed", () => {
    const attempt = (silentMs: number | null) =>
      node({
        status: "running",
        finishedAt: null,
        attempts: [{ n: 1, worker: "vm-1-abc", startedAt: at(0), finishedAt: null, outcome: null, error: null, workerSilentMs: silentMs }],
      });
    const show = (silentMs: number | null) =>
      plain(renderRun({ ...run([attempt(silentMs)]), status: "running", finishedAt: null }, new Date(Date.parse(at(0)) + 9000)));
    expect(show(null)).not.toContain("silent");
    expect(show(6000)).toContain(
      "running for 9.0s on vm-1-abc (attempt 1, since 2026-12-01T12:00:00.000Z)\n      worker vm-1-abc silent for 6.0s: presumed crashed; the next worker to fetch its job, or a coordinator's reconciler, ends the attempt as crashed and starts the node again (a crash is retried whatever retries says, for a node's first 3 crashes); if that does not happen within a minute, check that a coordinator runs and a worker serves that queue",
    );
    expect(show(2000)).toContain("worker vm-1-abc silent for 2.0s (it renews its lease every second)");
  });
});
