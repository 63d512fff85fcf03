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
