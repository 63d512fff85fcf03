// The words a run's state, its trigger and an API token's scope are stored and shown as. Kept here,
// free of the storage layer, so that the CLI can check its flags without loading it.

export const RUN_STATUSES = ["pending", "running", "success", "failed", "cancelled"] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

export const TERMINAL_RUN_STATUSES: readonly RunStatus[] = ["success", "failed", "cancelled"];

/**
 * One run state or several, comma-separated (`pending,running`), as the API's and the CLI's run
 * filters take them; undefined when a word is not a state.
 */
export function runStatusList(text: string): RunStatus[] | undefined {
  const words = text.split(",").map((word) => word.trim());
  return words.every((word): word is RunStatus => (RUN_STATUSES as readonly string[]).includes(word)) ? words : undefined;
}

export const RUN_TRIGGERS = ["manual", "event", "schedule", "rerun", "backfill"] as const;
export type RunTrigger = (typeof RUN_TRIGGERS)[number];

/** Each scope includes the ones before it: `trigger` may read, `admin` may trigger. */
export const TOKEN_SCOPES = ["read", "trigger", "admin"] as const;
export type TokenScope = (typeof TOKEN_SCOPES)[number];
