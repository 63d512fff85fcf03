import { setTimeout as sleep } from "node:timers/promises";
import { pgErrorCode } from "./pg-error.js";

/** Serialisation failures and deadlocks: the whole batch rolled back and may simply run again. */
const RETRYABLE_CODES = new Set(["40001", "40P01"]);

interface Waiting<I, O> {
  input: I;
  resolve(output: O): void;
  reject(error: unknown): void;
}

/**
 * Group commit: requests that arrive while a batch is being written go together into the next
 * one, so under load many attempts share one statement and one commit, and a lone request is
 * written at once. Callers see their own result as if they had written alone.
 */
export class GroupCommit<I, O> {
  private waiting: Waiting<I, O>[] = [];
  private inFlight = 0;

  constructor(
    private readonly write: (inputs: I[]) => Promise<O[]>,
    private readonly options: { maxBatch: number; parallel: number } = { maxBatch: 200, parallel: 2 },
  ) {}

  submit(input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.waiting.push({ input, resolve, reject });
      this.drain();
    });
  }

  private drain(): void {
    while (this.inFlight < this.options.parallel && this.waiting.length > 0) {
      const batch = this.waiting.splice(0, this.options.maxBatch);
      this.inFlight += 1;
      void this.flush(batch).finally(() => {
        this.inFlight -= 1;
        this.drain();
      });
    }
  }

  private async flush(batch: Waiting<I, O>[]): Promise<void> {
    for (let tries = 1; ; tries++) {
      try {
        const outputs = await this.write(batch.map((w) => w.input));
        batch.forEach((w, i) => w.resolve(outputs[i]!));
        return;
      } catch (error) {
        const code = pgErrorCode(error);
        if (code !== undefined && RETRYABLE_CODES.has(code) && tries < 5) {
          await sleep(5 * tries);
          continue;
        }
        batch.forEach((w) => w.reject(error));
        return;
      }
    }
  }
}
