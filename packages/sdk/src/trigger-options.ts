import { z } from "zod";
import type { CallerTransactionHandle } from "@ax/store";
import { durationMs, type Duration } from "./duration.js";
import { AxTriggerOptionError } from "@ax/common";
import { formatIssues } from "./options.js";
import { validDate } from "./option-checks.js";

/** BullMQ's priority range: 1 is served first. */
export const MAX_PRIORITY = 2 ** 21 - 1;

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
