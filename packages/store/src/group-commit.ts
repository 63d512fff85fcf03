import { setTimeout as sleep } from "node:timers/promises";
import { isConnectionError, pgErrorCode } from "./pg-error.js";
import { toStoreError } from "./store-error.js";

/** Serialisation failures and deadlocks: the whole batch rolled back and may simply run again. */
const RETRYABLE_CODES = new Set(["40001", "40P01"]);

interface Waiting<I, O> {
  input: I;
  resolve(output: O): void;
  reject(error: unknown): void;
}

/** Items per statement: a burst larger than this is written in several batches, one after the other. */
const MAX_BATCH = 200;

/**
 * Group commit: requests that arrive while a batch is being written go together into the next
 * one, so under load many attempts share one statement and one commit, and a lone request is
 * written at once. Callers see their own result, or their own error, as if they had written alone.
 *
 * One batch is in flight at a time. Two at a time (before 0.7.3) halved the batches, and
 * PostgreSQL's work per task grows with the number of statements: in `pnpm bench` a worker
 * draining queued no-op runs used 0.19–0.20 ms of PostgreSQL CPU per task with two and
 * 0.12–0.14 ms with one. Measured again in 0.21.2, two made every throughput row slower.
 *
 * `write` must be atomic (one statement or one transaction) or idempotent, since a failed batch
 * is written again in parts.
 */
export class GroupCommit<I, O> {
  private waiting: Waiting<I, O>[] = [];
  private writing = false;

  constructor(private readonly write: (inputs: I[]) => Promise<O[]>) {}

  submit(input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.waiting.push({ input, resolve, reject });
      this.drain();
    });
  }

  private drain(): void {
    if (this.writing || this.waiting.length === 0) return;
    this.writing = true;
    void this.flush(this.waiting.splice(0, MAX_BATCH)).finally(() => {
      this.writing = false;
      this.drain();
    });
  }

  /**
   * A batch refused for its content (one item PostgreSQL cannot store, a constraint) is split in
   * halves until the guilty items stand alone, so only they fail. An unreachable database fails
   * the whole batch at once: every part would fail alike, and callers retry connection errors.
   */
  private async flush(batch: Waiting<I, O>[]): Promise<void> {
    const failed = await this.writeRetryingConflicts(batch);
    if (!failed) return;
    if (batch.length === 1 || isConnectionError(failed.error) || isRetryable(failed.error)) {
      const error = toStoreError(failed.error);
      for (const waiting of batch) waiting.reject(error);
      return;
    }
    // One half after the other: halves of one batch may touch the same rows (a run's row, a
    // fan-in node) and would otherwise wait on, or deadlock with, each other.
    const half = Math.ceil(batch.length / 2);
    await this.flush(batch.slice(0, half));
    await this.flush(batch.slice(half));
  }

  private async writeRetryingConflicts(batch: Waiting<I, O>[]): Promise<{ error: unknown } | undefined> {
    for (let tries = 1; ; tries++) {
      try {
        const outputs = await this.write(batch.map((w) => w.input));
        batch.forEach((w, i) => {
          w.resolve(outputs[i]!);
        });
        return undefined;
      } catch (error) {
        if (!isRetryable(error) || tries >= 5) return { error };
        await sleep(5 * tries);
      }
    }
  }
}

function isRetryable(error: unknown): boolean {
  const code = pgErrorCode(error);
  return code !== undefined && RETRYABLE_CODES.has(code);
}
