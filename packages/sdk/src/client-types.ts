import type { Logger } from "pino";
import type { RunFilter as StoredRunFilter } from "@ax/store";
import type { Flow } from "./definition/flow.js";
import type { Duration } from "./duration.js";
import type { ConnectionOptions } from "./connections.js";
import type { RunTimingOptions } from "./trigger-options.js";

export interface ClientOptions extends ConnectionOptions {
  /** Flows whose `idempotencyKey`/`businessKey` functions should apply to triggers from here. */
  flows?: Flow<any>[] | undefined;
  /** @defaultValue 1 MiB */
  maxPayloadBytes?: number | undefined;
  /**
   * Where its connections' warnings go (Redis unreachable, reconnecting).
   * @defaultValue stderr, warnings and worse (`AX_LOG_LEVEL` sets the level)
   */
  logger?: Logger | undefined;
}

export interface PruneRequest {
  /** History older than this goes: a duration such as "90d" (at least 1h). */
  olderThan: Duration;
  /** Copy into the `*_archive` tables before deleting. */
  archive?: boolean | undefined;
  /** Count what would go; change nothing. */
  dryRun?: boolean | undefined;
  /** Runs per transaction. @defaultValue 1000 */
  batch?: number | undefined;
  /** After each transaction: runs pruned so far, of `total` counted at the start. */
  onProgress?: ((runs: number, total: number) => void) | undefined;
  signal?: AbortSignal | undefined;
}

/** What `listRuns` and `listRunPage` narrow by; times as a Date or ISO 8601 text with its offset (a date alone is midnight UTC). */
export interface RunFilter extends Omit<StoredRunFilter, "from" | "to"> {
  /** Runs created at or after this moment. */
  from?: Date | string | undefined;
  /** Runs created before this moment. */
  to?: Date | string | undefined;
}

export interface BackfillOptions {
  /** First tick included (a Date or an ISO 8601 string). */
  from: Date | string;
  /** End of the range, excluded. */
  to: Date | string;
  /** Runs of this backfill at once. @defaultValue the flow's maxConcurrentRuns, else 10 */
  maxConcurrentRuns?: number | undefined;
  /** Refuse a range with more ticks (AxTooManyTicksError). @defaultValue 100000 */
  maxTicks?: number | undefined;
}

export interface TriggerOptions extends RunTimingOptions {
  idempotencyKey?: string | undefined;
  businessKey?: string | undefined;
}

/** `triggerFlows` options: shared timing, and keys computed per payload. */
export interface TriggerManyOptions extends RunTimingOptions {
  /** The idempotency key of each payload; defaults to the flow's own `idempotencyKey` function. */
  idempotencyKey?: ((payload: unknown, index: number) => string | undefined) | undefined;
  /** The business key of each payload; defaults to the flow's own `businessKey` function. */
  businessKey?: ((payload: unknown, index: number) => string | undefined) | undefined;
}
