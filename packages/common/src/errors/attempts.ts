/** Errors a task throws to steer its retries, and those that end an attempt. */

/** Throw from a task to fail the node at once, whatever its `retries`. */
export class NonRetryableError extends Error {
  override name = "NonRetryableError";
}

/** Throw from a task to be retried after exactly `delay` (ms when a number), instead of the backoff. */
export class RetryAfterError extends Error {
  override name = "RetryAfterError";
  readonly delayMs: number;
  constructor(delayMs: number, message = `retry requested in ${delayMs} ms`) {
    // A delay it cannot keep would otherwise fall back to the backoff (NaN, "2s") or retry at once (-1).
    if (typeof delayMs !== "number" || !Number.isFinite(delayMs) || delayMs < 0) {
      throw new TypeError(
        `RetryAfterError(delayMs): delayMs must be a finite number of milliseconds, 0 or more, got ${typeof delayMs === "string" ? JSON.stringify(delayMs) : String(delayMs)} (for "2s" write 2000)`,
      );
    }
    super(message);
    this.delayMs = delayMs;
  }
}

/** A task returned more than `maxResultBytes`. */
export class AxResultTooLargeError extends Error {
  override name = "AxResultTooLargeError";
  constructor(task: string, bytes: number, limit: number) {
    super(
      `task "${task}" returned ${bytes} bytes, over maxResultBytes (${limit}). Store the data elsewhere (a table, an object key) and return a reference to it.`,
    );
  }
}

/** An attempt ran past its `timeout`. */
export class AxTimeoutError extends Error {
  override name = "AxTimeoutError";
  constructor(task: string, timeoutMs: number) {
    super(`task "${task}" ran past its timeout of ${timeoutMs} ms; raise "timeout" if the work is legitimately slow.`);
  }
}

/** No `heartbeat()` arrived within `heartbeatTimeout`. */
export class AxHeartbeatLostError extends Error {
  override name = "AxHeartbeatLostError";
  constructor(task: string, windowMs: number) {
    super(`task "${task}" sent no heartbeat() for ${windowMs} ms; call ax.context().heartbeat() more often or raise heartbeatTimeout.`);
  }
}

/** A node waited past the grace period with no live worker defining its task in its queue (a rolling deploy gone wrong). */
export class AxUnknownTaskError extends Error {
  override name = "AxUnknownTaskError";
  constructor(task: string, queue: string, waitedMs: number) {
    super(
      `no live worker defined task "${task}" in queue "${queue}" for ${Math.round(waitedMs / 1000)} s: deploy the code that defines it to a worker serving that queue (ax worker --queues ${queue}), then rerun.`,
    );
  }
}

/**
 * The worker that ran an attempt died (or lost its lease) before finishing it. With `unserved`, the
 * reconciler closed it: no live worker served the task's queue for the grace period to retry it.
 */
export class AxWorkerCrashedError extends Error {
  override name = "AxWorkerCrashedError";
  constructor(worker: string | null, attempt: number, unserved?: { task: string; queue: string; waitedMs: number }) {
    const crashed = `worker ${worker ?? "(unknown)"} stopped heartbeating during attempt ${attempt}`;
    super(
      unserved
        ? `${crashed}, and no live worker has served task "${unserved.task}" in queue "${unserved.queue}" since (${Math.round(unserved.waitedMs / 1000)} s) to retry it: start a worker that defines it (ax worker --queues ${unserved.queue}), then rerun.`
        : `${crashed}; the attempt is presumed crashed (the process died or was killed, its machine was lost, or it stopped while PostgreSQL could not take the attempt's outcome or hand-back).`,
    );
  }
}

/** An attempt on the thread or process executor went past its `resources` cap. */
export class AxResourceLimitError extends Error {
  override name = "AxResourceLimitError";
  readonly resource: "memory" | "cpu";
  constructor(task: string, resource: "memory" | "cpu", limit: string) {
    super(
      resource === "memory"
        ? `task "${task}" ran out of memory: its heap is capped at ${limit} by resources.memoryMb. Raise memoryMb (the executor and the task's imports take their share too) or process the data in smaller pieces.`
        : `task "${task}" used more than ${limit} of CPU time (resources.cpuSeconds) and was stopped. Raise cpuSeconds or split the work.`,
    );
    this.resource = resource;
  }
}

/** The thread or process executor could not run an attempt (module not found, child died, too slow to start). */
export class AxExecutorError extends Error {
  override name = "AxExecutorError";
}

/**
 * The outcome of an attempt could not be written to PostgreSQL, so this short failure was
 * recorded instead. It holds no data of the task's; the worker's log has the refused write.
 */
export class AxOutcomeNotRecordedError extends Error {
  override name = "AxOutcomeNotRecordedError";
  constructor(task: string, attempt: number, why: string) {
    super(
      `the outcome of attempt ${attempt} of task "${task}" could not be recorded: ${why}. The task's result or error was dropped; see the worker's log for the refused write.`,
    );
  }
}

/** The worker that ran an attempt could not record its outcome in time and gave the attempt up. */
export class AxAttemptAbandonedError extends Error {
  override name = "AxAttemptAbandonedError";
  constructor(worker: string | null, attempt: number) {
    super(
      `worker ${worker ?? "(unknown)"} could not record the outcome of attempt ${attempt} within 30 s and gave it up; the attempt is presumed crashed. Its log says why the write failed ("could not record the attempt's outcome").`,
    );
  }
}

/** An `ax.once` call lost its claim on the key before it could store `fn`'s result. */
export class AxOnceClaimLostError extends Error {
  override name = "AxOnceClaimLostError";
  constructor(key: string) {
    super(
      `ax.once("${key}") lost its claim before storing the result: the lease lapsed (the attempt ended, or PostgreSQL was unreachable while fn ran) and another attempt may have run fn. The attempt is retried; keep fn's effects idempotent.`,
    );
  }
}

/** The worker running an attempt stopped before it finished; the attempt was handed back. */
export class AxWorkerStoppedError extends Error {
  override name = "AxWorkerStoppedError";
  constructor(worker: string, timeoutMs: number) {
    super(
      `worker ${worker} was stopped and its attempt did not finish within the stop timeout (${timeoutMs} ms); the node was handed back for another attempt, which charges no retry. Give stop() a longer timeout (\`ax worker --stop-timeout\`) for tasks this long; the attempt's ax.context().signal aborted at the hand-back, so a task that honours it stops instead of running on beside the new attempt.`,
    );
  }
}

/**
 * The attempt was closed `crashed` while it still ran here: this worker could not renew its lease
 * in time (its process stalled, or lost PostgreSQL), and another attempt took the node over. The
 * attempt's `signal` aborts with it, so the function stops rather than run beside its successor.
 */
export class AxAttemptTakenOverError extends Error {
  override name = "AxAttemptTakenOverError";
  constructor(worker: string, nodeKey: string, attempt: number) {
    super(
      `attempt ${attempt} of node "${nodeKey}" was taken over: worker ${worker} missed its lease (the process stalled or lost PostgreSQL) and the attempt was closed as crashed, so a new attempt runs instead. This one is aborted; its result would be dropped.`,
    );
  }
}

/**
 * An attempt recorded as running under a live worker that is not executing it: its outcome,
 * committed without waiting for the disk (`durability: "run"`), was lost in a PostgreSQL crash,
 * or the reply to the completion that started it was lost.
 */
export class AxOutcomeLostError extends Error {
  override name = "AxOutcomeLostError";
  constructor(worker: string) {
    super(
      `worker ${worker} is recorded as running this attempt but is not executing it: its outcome was lost, so the node runs again. ` +
        'Either PostgreSQL was unreachable for over 30 s after the task ended (the worker then stops trying to record it; its log says "could not record"), ' +
        'or a PostgreSQL crash lost steps committed without waiting for the disk (worker durability "run"; "step" prevents that), or the reply to a write was lost. ' +
        "If running the task twice does harm, make its effect idempotent (ax.once, or a key the called service deduplicates on).",
    );
  }
}

/** A retried write did not succeed before its deadline; `cause` is its last error, if it answered at all. */
export class AxDbDeadlineError extends Error {
  override name = "AxDbDeadlineError";
  constructor(
    readonly waitedMs: number,
    cause: unknown,
  ) {
    super(
      cause === undefined
        ? `PostgreSQL did not answer the write within ${waitedMs} ms; check the database's load and locks.`
        : `PostgreSQL did not accept the write within ${waitedMs} ms (retried with backoff); check that it is reachable.`,
      { cause },
    );
  }
}
