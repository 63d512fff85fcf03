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

/**
 * Of the ticks a running coordinator finds due (oldest first), those it claims: every tick
 * reached in time, and of the missed ones what `catchUp` says of ticks missed while no
 * coordinator ran (none, the newest, or the newest `maxCatchUp`), so a frozen process does not
 * replay its gap on waking. Answers how many missed ticks are skipped.
 */
export function dueTicks(spec: CatchUpSpec, due: Date[], now: Date, missedAfterMs = MISSED_AFTER_MS): { ticks: Date[]; skipped: number } {
  const cutoff = now.getTime() - missedAfterMs;
  const missed = due.filter((t) => t.getTime() < cutoff);
  const inTime = due.filter((t) => t.getTime() >= cutoff);
  const kept = spec.catchUp === "none" ? [] : missed.slice(-(spec.catchUp === "latest" ? 1 : spec.maxCatchUp));
  return { ticks: [...kept, ...inTime], skipped: missed.length - kept.length };
}
