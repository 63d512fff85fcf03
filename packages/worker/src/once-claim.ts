import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { claimOnceKey, completeOnceClaim, releaseOnceClaim, renewOnceClaim, type Db, type Json, type OnceClaimState } from "@ax/store";
import type { AttemptIdentity } from "./context.js";
import { isConnectionError } from "./db-retry.js";
import { AxOnceClaimLostError } from "@ax/common";

/**
 * How long a claim outlives its last renewal. A dead worker's key is taken over after at most
 * this; renewals come every third of it, so two missed ones (a busy event loop, a short database
 * hiccup) do not lose the claim.
 */
export const ONCE_LEASE_MS = 10_000;
const FIRST_POLL_MS = 50;
const MAX_POLL_MS = 1000;
/** Between tries of a claim while PostgreSQL does not answer. */
const RECONNECT_POLL_MS = 200;

/** Who holds a claim: the attempt, its worker, and the call (one attempt may call ax.once twice at once). */
export function onceClaimant(attempt: Pick<AttemptIdentity, "runId" | "nodeKey" | "attempt">, workerId: string): string {
  return `${attempt.runId}/${attempt.nodeKey}/${attempt.attempt}@${workerId}#${randomBytes(4).toString("hex")}`;
}

export interface OnceClaimOptions {
  /** @defaultValue ONCE_LEASE_MS */
  leaseMs?: number | undefined;
  /** The attempt's end: stops waiting for another holder, and stops renewing a held claim. */
  signal?: AbortSignal | undefined;
  /** The run of the claiming attempt: retention keeps the key while that run is unfinished. */
  runId?: string | undefined;
}

/**
 * A claim this process holds on a key while `fn` runs: renewed on a timer until completed or
 * released, or until the attempt's signal aborts (an attempt that ended must not keep the key:
 * its lease then lapses and a retry takes it over).
 */
export class OnceLease {
  readonly done = false;
  private readonly timer: NodeJS.Timeout;
  private readonly onAbort = () => this.stopRenewing();

  constructor(
    private readonly db: Db,
    readonly key: string,
    readonly claimant: string,
    private readonly leaseMs: number,
    private readonly signal: AbortSignal | undefined,
  ) {
    this.timer = setInterval(() => void this.renew(), leaseMs / 3).unref();
    signal?.addEventListener("abort", this.onAbort, { once: true });
    if (signal?.aborted) this.stopRenewing();
  }

  /** Stores the result; resolves with it as later callers will read it. */
  async complete(result: Json): Promise<Json> {
    this.stopRenewing();
    const stored = await this.whileLeased(() => completeOnceClaim(this.db, this.key, this.claimant, result));
    if (stored === undefined) throw new AxOnceClaimLostError(this.key);
    return stored;
  }

  async release(): Promise<void> {
    this.stopRenewing();
    await this.whileLeased(() => releaseOnceClaim(this.db, this.key, this.claimant));
  }

  private stopRenewing(): void {
    clearInterval(this.timer);
    this.signal?.removeEventListener("abort", this.onAbort);
  }

  private async renew(): Promise<void> {
    try {
      if (!(await renewOnceClaim(this.db, this.key, this.claimant, this.leaseMs))) this.stopRenewing();
    } catch {
      // The next tick tries again; the lease covers two missed renewals, and complete() is fenced.
    }
  }

  /** Retries a write while PostgreSQL is unreachable, for as long as the claim could still be ours. */
  private async whileLeased<T>(write: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + this.leaseMs;
    for (let waitMs = 100; ; waitMs = Math.min(waitMs * 2, 2000)) {
      try {
        return await write();
      } catch (error) {
        if (!isConnectionError(error) || Date.now() + waitMs > deadline) throw error;
        await sleep(waitMs);
      }
    }
  }
}

/**
 * Waits until `claimant` holds `key` (a fresh claim, or one whose holder's lease lapsed) or the
 * key is done. While another call holds it this polls with backoff, one short statement at a
 * time, so no transaction, row lock or pooled connection is held while waiting.
 */
export async function claimOnce(
  db: Db,
  key: string,
  claimant: string,
  options: OnceClaimOptions = {},
): Promise<{ done: true; result: Json } | OnceLease> {
  const leaseMs = options.leaseMs ?? ONCE_LEASE_MS;
  for (let waitMs = FIRST_POLL_MS; ; waitMs = Math.min(waitMs * 2, MAX_POLL_MS)) {
    options.signal?.throwIfAborted();
    let found: OnceClaimState;
    try {
      found = await claimOnceKey(db, key, claimant, leaseMs, options.runId ?? null);
    } catch (error) {
      // PostgreSQL restarting: try again until it answers or the attempt ends, as the attempt's own writes do.
      if (!isConnectionError(error)) throw error;
      await pause(Math.max(waitMs, RECONNECT_POLL_MS), options.signal);
      continue;
    }
    // Ours already: an earlier try committed and its reply was lost.
    if (found.state === "claimed" || (found.state === "held" && found.claimedBy === claimant)) {
      return new OnceLease(db, key, claimant, leaseMs, options.signal);
    }
    if (found.state === "done") return { done: true, result: found.result };
    if (found.state === "held") await pause(waitMs, options.signal);
  }
}

/** Sleeps, or rejects with the signal's reason (the attempt's timeout or cancel error) when it aborts. */
async function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  try {
    await sleep(ms, undefined, { signal });
  } catch (error) {
    throw signal?.aborted ? signal.reason : error;
  }
}
