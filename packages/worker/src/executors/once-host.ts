import type { AttemptIdentity } from "../context.js";
import { claimOnce, onceClaimant, type OnceLease } from "../once-claim.js";
import type { AttemptStore } from "../once-scope.js";
import { serialiseError, type OnceAnswer, type OnceRequest } from "./protocol.js";
import { AxExecutorError } from "@ax/common";

/**
 * The parent's side of `ax.once` for one attempt in a thread or process child: claims keys in
 * the worker's database, renews them while the child's `fn` runs, and stores or releases them
 * when the child says so. The child holds no connection, and stopping it cannot strand a claim.
 */
export class OnceHost {
  private readonly held = new Map<number, OnceLease>();
  private readonly ended = new AbortController();
  private lastClaim = 0;

  constructor(
    private readonly store: AttemptStore | undefined,
    private readonly attempt: AttemptIdentity,
  ) {}

  async answer(request: OnceRequest): Promise<OnceAnswer> {
    try {
      return await this.serve(request);
    } catch (error) {
      return { outcome: "error", error: serialiseError(error) };
    }
  }

  /**
   * The attempt ended (result, error, timeout, cancel, child death): stop waiting on keys and
   * release what the child still held. Its `fn` was stopped with it, or is abandoned by a task
   * that returned without awaiting it; either way the next attempt may run it again at once.
   */
  async close(): Promise<void> {
    this.ended.abort(new AxExecutorError("the attempt ended while ax.once was waiting for its key"));
    const leases = [...this.held.values()];
    this.held.clear();
    await Promise.all(leases.map((lease) => lease.release().catch(() => {})));
  }

  private async serve(request: OnceRequest): Promise<OnceAnswer> {
    if (request.op === "claim") return this.claim(request.key);
    const lease = this.held.get(request.claim);
    if (!lease) throw new AxExecutorError(`ax.once claim ${request.claim} is not held for this attempt (it ended or was released)`);
    this.held.delete(request.claim);
    if (request.op === "complete") return { outcome: "done", result: await lease.complete(request.result) };
    await lease.release();
    return { outcome: "released" };
  }

  private async claim(key: string): Promise<OnceAnswer> {
    if (!this.store) {
      throw new AxExecutorError(`ax.once("${key}") needs the worker's database, and this attempt was not started by a worker`);
    }
    const signal = this.ended.signal;
    const got = await claimOnce(this.store.db, key, onceClaimant(this.attempt, this.store.workerId), { signal, runId: this.attempt.runId });
    if (got.done) return { outcome: "done", result: got.result };
    if (signal.aborted) {
      await got.release();
      throw signal.reason;
    }
    this.held.set(++this.lastClaim, got);
    return { outcome: "claimed", claim: this.lastClaim };
  }
}
