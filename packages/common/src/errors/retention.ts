/** Errors of task logs and retention (pruning old history). */

/** Another prune (a coordinator's retention pass or `ax prune`) holds the cluster-wide prune lock. */
export class AxPruneBusyError extends Error {
  override name = "AxPruneBusyError";
  constructor() {
    super("another prune is running (a coordinator's hourly retention pass or another `ax prune`); try again when it has finished");
  }
}

/** A retention period that cannot be used (too short, or not a duration). */
export class AxRetentionError extends Error {
  override name = "AxRetentionError";
  constructor(detail: string) {
    // A detail from the configuration's own check carries the hint already.
    const hint = detail.includes("write a duration") ? "" : '; write a duration such as "90d", "30d" or "12h"';
    super(`retention: ${detail}${hint}`);
  }
}

/** `POST /api/history/prune` on a server started without a history service (a test's bare server). */
export class AxPruneUnavailableError extends Error {
  override name = "AxPruneUnavailableError";
  constructor() {
    super(
      "this server has no history service, so it cannot prune; start it with `ax server` or a Runtime with the api role, or run `ax prune` on the storage",
    );
  }
}
