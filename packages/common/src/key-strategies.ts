/** What to do when a node's concurrency key is at its limit. */
export type KeyStrategy = "queue" | "cancel_in_progress" | "cancel_newest";
// In @ax/common rather than @ax/worker: option parsing, which the producer's Client also loads, needs the list.
export const KEY_STRATEGIES = ["queue", "cancel_in_progress", "cancel_newest"] as const;
