import { z } from "zod";
import type { CallerTransactionHandle } from "@ax/store";
import { durationMs, type Duration } from "./duration.js";
import { AxTriggerOptionError } from "@ax/common";
import { formatIssues } from "./option-checks.js";
import { validDate } from "./option-checks.js";
import { MAX_KEY_LENGTH, MAX_PRIORITY, returnedKey } from "@ax/common";

/** Options every run of a trigger shares. */
export interface RunTimingOptions {
  /**
   * The caller's open transaction: a `pg` Client/PoolClient after BEGIN, or a drizzle
   * transaction. The run is written in it (commits or rolls back with the caller's writes) and
   * its first jobs are enqueued only after the commit, by a coordinator listening for it.
   */
  tx?: CallerTransactionHandle | undefined;
  /** Start the run's first nodes this long after the trigger (a duration). */
  delay?: Duration | undefined;
  /** Start the run's first nodes at this time (instead of `delay`). */
  runAt?: Date | undefined;
  /**
   * BullMQ priority of every job of the run, 1 (served first) to 2,097,151 (BullMQ refuses more). Jobs without a
   * priority are served before prioritised ones (BullMQ's rule).
   */
  priority?: number | undefined;
  /**
   * How the run is labelled (`RunInfo.trigger`, the `trigger` filter of run lists): `"event"` for a
   * producer service reacting to something that happened, `"manual"` for a run a person asked for.
   * @defaultValue "manual"
   */
  trigger?: "manual" | "event" | undefined;
}

const timing = z
  .object({
    delay: durationMs.optional(),
    runAt: validDate.optional(),
    priority: z.number().int().min(1).max(MAX_PRIORITY).optional(),
  })
  .refine((o) => o.delay === undefined || o.runAt === undefined, { message: "give delay or runAt, not both", path: ["runAt"] });

/** Checks `delay` / `runAt` / `priority` and returns when the run is due and its priority. */
export function resolveTiming(options: RunTimingOptions): { runAt: Date | undefined; priority: number | undefined } {
  const parsed = timing.safeParse({ delay: options.delay, runAt: options.runAt, priority: options.priority });
  if (!parsed.success) throw new AxTriggerOptionError(`trigger options: ${formatIssues(parsed.error)}`);
  const { delay, runAt, priority } = parsed.data;
  return { runAt: runAt ?? (delay ? new Date(Date.now() + delay) : undefined), priority };
}

/**
 * Refuses an empty idempotency or business key, or one over MAX_KEY_LENGTH, whether given or
 * returned by the flow's key function, before anything is written. An empty idempotency key
 * would be one key shared by every such trigger: all but the first would get the first run back.
 */
export function checkKeys(
  keys: { idempotencyKey?: string | null | undefined; businessKey?: string | null | undefined },
  payloadIndex?: number,
): void {
  for (const which of ["idempotencyKey", "businessKey"] as const) {
    const key = keys[which];
    if (typeof key !== "string") continue;
    const where = payloadIndex === undefined ? "" : ` (payload ${payloadIndex})`;
    if (key.length === 0) {
      throw new AxTriggerOptionError(`trigger options: ${which}${where} is empty: give a non-empty key, or none (undefined) for no key`);
    }
    if (key.length <= MAX_KEY_LENGTH) continue;
    throw new AxTriggerOptionError(
      `trigger options: ${which}${where}: ${key.length} characters; keys are at most ${MAX_KEY_LENGTH}, so derive a shorter one (a hash of the long one)`,
    );
  }
}

/** A key from one of the flow's key functions, by the rule the HTTP API applies too. */
export function computedKey(
  fn: ((payload: any) => unknown) | undefined,
  payload: unknown,
  which: "idempotencyKey" | "businessKey",
  payloadIndex?: number,
  remedy = `pass ${which} in the trigger options`,
): string | undefined {
  if (!fn) return undefined;
  const where = payloadIndex === undefined ? "" : ` (payload ${payloadIndex})`;
  let returned: unknown;
  try {
    returned = fn(payload);
  } catch (error) {
    throw new AxTriggerOptionError(
      `trigger options: the ${which} function${where} threw on this payload (${error instanceof Error ? error.message : String(error)}); make it handle such a payload, or ${remedy}`,
      { cause: error },
    );
  }
  const { key, refused } = returnedKey(returned);
  if (refused === undefined) return key;
  throw new AxTriggerOptionError(`trigger options: the ${which} function${where} ${refused}`);
}
