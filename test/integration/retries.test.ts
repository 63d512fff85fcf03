import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, RetryAfterError, type AxEvent, type Client, type RunInfo, type Runtime, type TaskRunInfo } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

class InvoiceApiError extends Error {
  override name = "InvoiceApiError";
}
class ConfigError extends Error {
  override name = "ConfigError";
}

/**
 * Delayed-job promotion, fence and PostgreSQL round trips between "due" and "started", on a
 * machine whose two cores other test files share (timers then fire late): a retry too early is
 * the bug this file looks for, a late one only the machine's load.
 */
const SCHEDULING_TOLERANCE_MS = 800;
const BACKOFF_MS = 300;
// 250 ms was passed by 27 ms once with four test files at once on a machine twice as slow.
const RECORDING_TOLERANCE_MS = 400;
const JITTER = 0.2;

interface InvoiceInput {
  error: "InvoiceApiError" | "ConfigError";
  failures: number;
}

const createInvoice = ax.task(
  { name: "create_invoice", retries: 3, retryOn: [InvoiceApiError], retryBackoff: BACKOFF_MS / 1000, jitter: JITTER },
  (input: InvoiceInput) => {
    const { attempt } = ax.context();
    if (attempt <= input.failures) {
      throw input.error === "ConfigError"
        ? new ConfigError("invoice template is missing")
        : new InvoiceApiError(`503 on attempt ${attempt}`);
    }
    return { invoice: `INV-${attempt}` };
  },
);

const charge = ax.task({ name: "charge" }, () => ({ charged: true }));
const sendNotification = ax.task({ name: "send_notification", onFailure: "notify_only" }, (_paid: unknown): string => {
  throw new Error("SMTP relay refused the message");
});
const auditNotification = ax.task({ name: "audit_notification" }, (sent: string) => sent);
const ship = ax.task({ name: "ship" }, (paid: { charged: boolean }) => ({ shipped: paid.charged }));

const RETRY_AFTER_MS = 900;
const rateLimited = ax.task({ name: "rate_limited", retries: 2, retryBackoff: 0.05, jitter: 0 }, () => {
  if (ax.context().attempt === 1) throw new RetryAfterError(RETRY_AFTER_MS);
  return "ok";
});

const heartbeating = ax.task({ name: "long_report", heartbeatTimeout: 1 }, async (totalMs: number) => {
  const { heartbeat, signal } = ax.context();
  const started = Date.now();
  let beats = 0;
  while (Date.now() - started < totalMs) {
    if (signal.aborted) throw signal.reason;
    await sleep(200);
    heartbeat({ beats: ++beats, elapsedMs: Date.now() - started });
  }
  return beats;
});

const abortedBySignal: number[] = [];
const goesSilent = ax.task({ name: "goes_silent", heartbeatTimeout: 1, retries: 1, retryBackoff: 0.1 }, async () => {
  const { heartbeat, signal, attempt } = ax.context();
  if (attempt > 1) return "second attempt finished";
  for (let i = 0; i < 3; i++) {
    await sleep(200);
    heartbeat({ beat: i + 1 });
  }
  // Stops heartbeating and waits for the worker to give up on it.
  await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
  abortedBySignal.push(attempt);
  throw signal.reason;
});

const FIXED_BACKOFF_MS = 200;
const fixedBackoff = ax.task(
  { name: "fixed_backoff", retries: 4, retryBackoff: FIXED_BACKOFF_MS / 1000, backoff: "fixed", jitter: 0 },
  () => {
    if (ax.context().attempt < 5) throw new Error("not yet");
    return "done";
  },
);
const fixedFlow = ax.flow({ name: "fixed_backoff" }, () => {
  fixedBackoff();
});

const invoiceFlow = ax.flow({ name: "invoice" }, (input) => {
  createInvoice(input);
});
const notifyFlow = ax.flow({ name: "notify" }, () => {
  const paid = charge();
  const sent = sendNotification(paid);
  auditNotification(sent);
  ship(paid);
});
const retryAfterFlow = ax.flow({ name: "retry_after" }, () => {
  rateLimited();
});
const reportFlow = ax.flow({ name: "report" }, (input) => {
  heartbeating(input);
});
const silentFlow = ax.flow({ name: "silent" }, () => {
  goesSilent();
});

const ms = (iso: string | null) => new Date(iso!).getTime();

/** Idle time between each attempt's end and the next attempt's start. */
function gaps(task: TaskRunInfo): number[] {
  return task.attempts.slice(1).map((a, i) => ms(a.startedAt) - ms(task.attempts[i]!.finishedAt));
}

/** Polls the run until it ends, keeping every snapshot of one node. */
async function watchNode(
  client: Client,
  runId: string,
  nodeKey: string,
  timeoutMs = 20_000,
): Promise<{ run: RunInfo; seen: TaskRunInfo[] }> {
  const seen: TaskRunInfo[] = [];
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const run = await client.getRun(runId);
    const node = run.tasks.find((t) => t.key === nodeKey);
    if (node) seen.push(node);
    if (["success", "failed", "cancelled"].includes(run.status)) return { run, seen };
    if (Date.now() > deadline) throw new Error(`run ${runId} still ${run.status} after ${timeoutMs} ms`);
    await sleep(25);
  }
}

describe("retries, backoff, notify_only and heartbeats on real Redis and PostgreSQL", () => {
  const env = isolate("retries");
  let runtime: Runtime;
  let client: Client;
  const events: AxEvent[] = [];
  let unsubscribe: () => void;

  beforeAll(async () => {
    unsubscribe = ax.onEvent((event) => {
      events.push(event);
    });
    runtime = testRuntime(env, { flows: [invoiceFlow, notifyFlow, retryAfterFlow, reportFlow, silentFlow, fixedFlow], maxConcurrency: 10 });
    await runtime.start();
    client = runtime.client();
  });

  afterAll(async () => {
    unsubscribe?.();
    await runtime?.stop();
    await env.cleanup();
  });

  it("retries create_invoice after InvoiceApiError twice, with exponential backoff within jitter, showing `retrying` meanwhile", async () => {
    const runId = await client.triggerFlow("invoice", { error: "InvoiceApiError", failures: 2 } satisfies InvoiceInput);
    const { run, seen } = await watchNode(client, runId, "create_invoice");
    expect(run.status).toBe("success");
    const node = run.tasks[0]!;
    expect(node.result).toEqual({ invoice: "INV-3" });
    expect(node.nextRetryAt).toBeNull();
    expect(node.attempts.map((a) => a.outcome)).toEqual(["failed", "failed", "success"]);
    expect(node.attempts.map((a) => a.error?.name ?? null)).toEqual(["InvoiceApiError", "InvoiceApiError", null]);

    const observed = gaps(node);
    console.log(
      `create_invoice gaps between attempts: ${observed.join(" ms, ")} ms (expected ${BACKOFF_MS}±${JITTER * 100}%, ${2 * BACKOFF_MS}±${JITTER * 100}%)`,
    );
    observed.forEach((gap, i) => {
      const base = BACKOFF_MS * 2 ** i;
      // Both clocks are this machine's; a few ms between PostgreSQL's now() and Date.now().
      expect(gap).toBeGreaterThanOrEqual(base * (1 - JITTER) - 20);
      expect(gap).toBeLessThanOrEqual(base * (1 + JITTER) + SCHEDULING_TOLERANCE_MS);
    });

    const waiting = seen.filter((s) => s.status === "retrying");
    expect(waiting.length).toBeGreaterThan(0);
    for (const snapshot of waiting) {
      expect(snapshot.nextRetryAt).not.toBeNull();
      const failedAttempt = snapshot.attempts.at(-1)!;
      const delay = ms(snapshot.nextRetryAt) - ms(failedAttempt.finishedAt);
      const base = BACKOFF_MS * 2 ** (failedAttempt.n - 1);
      expect(delay).toBeGreaterThanOrEqual(base * (1 - JITTER) - 50);
      // The backoff counts from the failure's commit, which follows the function's end by the
      // time the worker takes to record it: 88 ms once in CI with the full suite on two cores.
      expect(delay).toBeLessThanOrEqual(base * (1 + JITTER) + RECORDING_TOLERANCE_MS);
    }
    // A poll every 25 ms usually sees both 300 ms and 600 ms waits, but a loaded host (CI once)
    // can stretch one read across the first; the events below show that both retries waited.
    for (const snapshot of waiting) expect([1, 2]).toContain(snapshot.attempts.length);

    const retryEvents = events.filter((e) => e.runId === runId && e.name === "task_retrying");
    expect(retryEvents.map((e) => e.attempt)).toEqual([1, 2]);
    // Each says when its retry is due: the stored time, the backoff after the failed attempt.
    for (const event of retryEvents) {
      const failedAttempt = node.attempts[event.attempt! - 1]!;
      expect(event.nextRetryAt).toMatch(/^\d{4}-\d\d-\d\dT/);
      expect(ms(event.nextRetryAt!)).toBeGreaterThanOrEqual(ms(failedAttempt.finishedAt));
      expect(ms(event.nextRetryAt!)).toBeLessThanOrEqual(ms(node.attempts[event.attempt!]!.startedAt) + 5);
    }
  });

  it("starts each retry when its backoff ends, one after another and four at once (not at the next second's poll)", async () => {
    // A retry that waited out the 1 s poll starts about 1 s late; a loaded machine (the whole suite
    // on two cores) delays one by up to 700 ms without any wake being missed.
    const MISSED_WAKE_MS = 800;
    const observed: number[] = [];
    for (let i = 0; i < 3; i++) {
      const run = await client.waitForRun(await client.triggerFlow("fixed_backoff", null), { timeout: "30s" });
      observed.push(...gaps(run.tasks[0]!));
    }
    const together = await Promise.all(Array.from({ length: 4 }, () => client.triggerFlow("fixed_backoff", null)));
    const lateStarts: number[] = [];
    for (const id of together) {
      const task = (await client.waitForRun(id, { timeout: "30s" })).tasks[0]!;
      observed.push(...gaps(task));
      gaps(task).forEach((gap, i) => {
        if (gap > FIXED_BACKOFF_MS + MISSED_WAKE_MS) lateStarts.push(ms(task.attempts[i + 1]!.startedAt));
      });
    }
    const late = observed.filter((gap) => gap > FIXED_BACKOFF_MS + MISSED_WAKE_MS);
    // The four runs fail and retry in step: retries that fell due together and started together
    // after a late look are one missed wake, not four.
    const sorted = lateStarts.toSorted((a, b) => a - b);
    const missedWakes = late.length - lateStarts.length + sorted.filter((t, i) => i === 0 || t - sorted[i - 1]! > 300).length;
    console.log(`fixed ${FIXED_BACKOFF_MS} ms backoff, 28 gaps: ${observed.join(", ")} ms; missed wakes: ${missedWakes}`);
    // Until 0.8.0 about one retry in four waited out the 1 s poll: a fetch that found the queue empty
    // just before the retry fell due put the next look a second away, and the retry's marker was taken.
    // Until 0.9.7 one in three runs of this test missed one: of retries falling due a millisecond
    // apart, the first one's fetch used up the queue's due time and an empty fetch forgot the next.
    expect(observed.every((gap) => gap >= FIXED_BACKOFF_MS - 20)).toBe(true);
    expect(missedWakes).toBeLessThanOrEqual(1);
  });

  it("fails create_invoice on the first attempt with a ConfigError, which is not in retryOn", async () => {
    const run = await client.waitForRun(await client.triggerFlow("invoice", { error: "ConfigError", failures: 5 } satisfies InvoiceInput), {
      timeout: "20s",
    });
    expect(run.status).toBe("failed");
    const node = run.tasks[0]!;
    expect(node.status).toBe("failed");
    expect(node.attempts).toHaveLength(1);
    expect(node.attempts[0]).toMatchObject({ outcome: "failed", error: { name: "ConfigError", message: "invoice template is missing" } });
    expect(node.nextRetryAt).toBeNull();
    expect(node.error).toMatchObject({ name: "ConfigError", notRetried: "error is not in retryOn" });
    // The run's event says which node failed it and why, without a getRun. Events arrive through Redis.
    const failedEvent = async () => events.find((e) => e.runId === run.id && e.name === "run_failed");
    for (let i = 0; i < 100 && !(await failedEvent()); i++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await failedEvent()).toMatchObject({
      nodeKey: "create_invoice",
      error: { name: "ConfigError", message: "invoice template is missing" },
    });
  });

  it("gives up after `retries` extra attempts when InvoiceApiError keeps coming", async () => {
    const run = await client.waitForRun(
      await client.triggerFlow("invoice", { error: "InvoiceApiError", failures: 99 } satisfies InvoiceInput),
      {
        timeout: "30s",
      },
    );
    expect(run.status).toBe("failed");
    expect(run.tasks[0]!.attempts.map((a) => a.outcome)).toEqual(["failed", "failed", "failed", "failed"]);
    expect(run.tasks[0]!.error).toMatchObject({ name: "InvoiceApiError", notRetried: "no retries left (retries: 3)" });
  });

  it("lets the run succeed when a notify_only task fails: node failed, its dependant skipped, task_failed emitted", async () => {
    const runId = await client.triggerFlow("notify", null);
    const run = await client.waitForRun(runId, { timeout: "20s" });
    expect(run.status).toBe("success");
    const byKey = Object.fromEntries(run.tasks.map((t) => [t.key, t]));
    expect(byKey.charge!.status).toBe("success");
    expect(byKey.ship!.status).toBe("success");
    expect(byKey.send_notification!.status).toBe("failed");
    expect(byKey.send_notification!.error).toMatchObject({ name: "Error", message: "SMTP relay refused the message" });
    expect(byKey.audit_notification!.status).toBe("skipped");
    await expect.poll(() => events.filter((e) => e.runId === runId).map((e) => e.name)).toContain("run_succeeded");
    const failed = events.filter((e) => e.runId === runId && e.name === "task_failed");
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({
      flow: "notify",
      nodeKey: "send_notification",
      attempt: 1,
      error: { message: "SMTP relay refused the message" },
    });
  });

  it("honours RetryAfterError: the next attempt starts after exactly that delay, not the backoff", async () => {
    const runId = await client.triggerFlow("retry_after", null);
    const { run, seen } = await watchNode(client, runId, "rate_limited");
    expect(run.status).toBe("success");
    const node = run.tasks[0]!;
    expect(node.attempts.map((a) => a.outcome)).toEqual(["failed", "success"]);
    expect(node.attempts[0]!.error?.name).toBe("RetryAfterError");
    const [gap] = gaps(node);
    console.log(`RetryAfterError(${RETRY_AFTER_MS}) gap: ${gap} ms`);
    expect(gap).toBeGreaterThanOrEqual(RETRY_AFTER_MS - 20);
    expect(gap).toBeLessThanOrEqual(RETRY_AFTER_MS + SCHEDULING_TOLERANCE_MS);
    const waiting = seen.find((s) => s.status === "retrying");
    expect(ms(waiting!.nextRetryAt) - ms(waiting!.attempts[0]!.finishedAt)).toBeGreaterThanOrEqual(RETRY_AFTER_MS - 50);
  });

  it("keeps a task alive for 5 s past a 1 s heartbeatTimeout while it heartbeats every 200 ms, storing its progress", async () => {
    const runId = await client.triggerFlow("report", 5000);
    const { run, seen } = await watchNode(client, runId, "long_report", 20_000);
    expect(run.status).toBe("success");
    const node = run.tasks[0]!;
    expect(node.attempts).toHaveLength(1);
    expect(node.attempts[0]!.outcome).toBe("success");
    expect(ms(node.attempts[0]!.finishedAt) - ms(node.attempts[0]!.startedAt)).toBeGreaterThanOrEqual(5000);
    expect(node.result).toBeGreaterThanOrEqual(20);
    const progress = seen.filter((s) => s.status === "running" && s.progress !== null).map((s) => (s.progress as { beats: number }).beats);
    expect(progress.length).toBeGreaterThan(5);
    expect(progress.at(-1)!).toBeGreaterThan(progress[0]!);
    expect((node.progress as { beats: number }).beats).toBeGreaterThanOrEqual(20);
  });

  it("ends an attempt `heartbeat_lost` when heartbeats stop, aborts its signal, and retries it per policy", async () => {
    const runId = await client.triggerFlow("silent", null);
    const { run, seen } = await watchNode(client, runId, "goes_silent");
    expect(run.status).toBe("success");
    const node = run.tasks[0]!;
    expect(node.result).toBe("second attempt finished");
    expect(node.attempts.map((a) => a.outcome)).toEqual(["heartbeat_lost", "success"]);
    expect(node.attempts[0]!.error?.name).toBe("AxHeartbeatLostError");
    // Three beats of 200 ms, then silence for the 1 s window.
    const firstMs = ms(node.attempts[0]!.finishedAt) - ms(node.attempts[0]!.startedAt);
    expect(firstMs).toBeGreaterThanOrEqual(1500);
    expect(firstMs).toBeLessThan(3000);
    expect(seen.some((s) => s.status === "running" && (s.progress as { beat?: number } | null)?.beat === 3)).toBe(true);
    expect(abortedBySignal).toEqual([1]);
  });
});
