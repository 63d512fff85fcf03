import type { CatchUp } from "@ax/store";
import { fireTimesBetween, type FireSpec } from "./fire-times.js";

export interface CatchUpSpec extends FireSpec {
  catchUp: CatchUp;
  maxCatchUp: number;
}

/**
 * The ticks missed since `lastTick` (the newest recorded tick of the flow) that a starting
 * coordinator runs now, oldest first: none, the newest one, or the newest `maxCatchUp`.
 * A flow that never ticked has missed nothing.
 */
export function catchUpTicks(spec: CatchUpSpec, lastTick: Date | null, now: Date): Date[] {
  if (!lastTick || spec.catchUp === "none") return [];
  return fireTimesBetween(spec, lastTick, now, spec.catchUp === "latest" ? 1 : spec.maxCatchUp);
}

/**
 * A tick found due more than this late was missed, not merely reached late: the loop wakes at
 * each fire time, so only a process that could not run (stopped, frozen, its machine suspended)
 * or could not claim (PostgreSQL unreachable) finds one so old.
 */
export const MISSED_AFTER_MS = 5000;

/** Missed ticks counted for a log line, at most (a per-second cron down for a day has 86,400). */
export const MISSED_COUNT_LIMIT = 10_000;

/** How many fire times fell in (`after`, `until`], counted up to MISSED_COUNT_LIMIT: `capped` when there may be more. */
export function countFireTimes(spec: FireSpec, after: Date, until: Date): { count: number; capped: boolean } {
  const count = fireTimesBetween(spec, after, until, MISSED_COUNT_LIMIT).length;
  return { count, capped: count >= MISSED_COUNT_LIMIT };
}

/**
 * The ticks a running coordinator that woke at `now` claims, oldest first, of the fire times
 * after `from`: every tick reached in time, and of the missed ones what `catchUp` says of ticks
 * missed while no coordinator ran (none, the newest, or the newest `maxCatchUp`), so a frozen
 * process does not replay its gap on waking. Answers how many missed ticks are skipped, counted
 * over the whole gap.
 */
export function dueTicks(
  spec: CatchUpSpec,
  from: Date,
  now: Date,
  missedAfterMs = MISSED_AFTER_MS,
): { ticks: Date[]; skipped: number; skippedCapped: boolean } {
  const cutoff = now.getTime() - missedAfterMs;
  const keep = spec.catchUp === "none" ? 0 : spec.catchUp === "latest" ? 1 : spec.maxCatchUp;
  // Ticks reached in time fall in the last `missedAfterMs`, and a cron fires at most once a second.
  const recent = Math.ceil(missedAfterMs / 1000) + 1;
  const limit = keep + recent;
  // Read back from `now`, each fire time a step: most wakes have one or two, a large maxCatchUp is read only after a gap.
  let due = fireTimesBetween(spec, from, now, recent + 1);
  if (due.length > recent && limit > recent + 1) due = fireTimesBetween(spec, from, now, limit);
  const missed = due.filter((t) => t.getTime() < cutoff);
  const kept = missed.slice(Math.max(0, missed.length - keep));
  const ticks = [...kept, ...due.filter((t) => t.getTime() >= cutoff)];
  if (due.length < limit) return { ticks, skipped: missed.length - kept.length, skippedCapped: false };
  // Only the newest fire times were read: the older ones of a long gap are counted, not listed.
  const all = countFireTimes(spec, from, new Date(cutoff - 1));
  return { ticks, skipped: all.count - kept.length, skippedCapped: all.capped };
}
