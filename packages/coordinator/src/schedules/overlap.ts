import type { Overlap } from "@ax/store";

export type TickDecision =
  | { status: "created" /** Earlier runs to cancel before this tick's run starts. */; cancel: string[] }
  | { status: "skipped" | "queued"; reason: string };

/**
 * What a tick does given the flow's unfinished runs (oldest first) and, for `queue`, the tick
 * already buffered behind them.
 */
export function decideOverlap(policy: Overlap, unfinished: string[], waiting: Date | undefined): TickDecision {
  const earlier = unfinished[0];
  if (earlier === undefined || policy === "allow") return { status: "created", cancel: [] };
  switch (policy) {
    case "skip":
      return { status: "skipped", reason: `run ${earlier} of this flow is still unfinished (overlap: skip)` };
    case "queue":
      return waiting
        ? { status: "skipped", reason: `the tick of ${waiting.toISOString()} is already queued behind run ${earlier} (overlap: queue)` }
        : { status: "queued", reason: `waits for run ${earlier} to finish (overlap: queue)` };
    case "cancel_previous":
      return { status: "created", cancel: unfinished };
  }
}
