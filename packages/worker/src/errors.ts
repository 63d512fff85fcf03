/** Throw from a task to fail the node at once, whatever its `retries`. */
export class NonRetryableError extends Error {
  override name = "NonRetryableError";
}

/** Throw from a task to be retried after exactly `delay` (ms when a number), instead of the backoff. */
export class RetryAfterError extends Error {
  override name = "RetryAfterError";
  readonly delayMs: number;
  constructor(delayMs: number, message = `retry requested in ${delayMs} ms`) {
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

/** A job named a task this worker process does not define. */
export class AxUnknownTaskError extends Error {
  override name = "AxUnknownTaskError";
  constructor(task: string, worker: string) {
    super(`task "${task}" is not defined in worker ${worker}: deploy the code that defines it to every worker of its queue.`);
  }
}

/** The worker that ran an attempt died (or lost its lease) before finishing it. */
export class AxWorkerCrashedError extends Error {
  override name = "AxWorkerCrashedError";
  constructor(worker: string | null, attempt: number) {
    super(`worker ${worker ?? "(unknown)"} stopped heartbeating during attempt ${attempt}; the attempt is presumed crashed.`);
  }
}
