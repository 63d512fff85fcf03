/**
 * Timing defaults, in one place because several packages must agree on them: the reconciler
 * takes over the attempts of a worker silent for the lease the worker itself assumes, and the
 * worker, the SDK's `stop()` and the CLI's `--stop-timeout` stop within the same time.
 * docs/api.md lists them; change both together.
 */

/** How often a worker process renews its lease in PostgreSQL. */
export const DEFAULT_HEARTBEAT_MS = 1000;
/** A worker silent this long is presumed crashed, by the worker's fence and the reconciler alike. */
export const DEFAULT_LEASE_MS = 5000;
/** BullMQ's job lock: a dead worker's jobs come back within this plus the stalled interval. */
export const DEFAULT_LOCK_DURATION_MS = 5000;
/** How often BullMQ looks for jobs whose lock lapsed. */
export const DEFAULT_STALLED_INTERVAL_MS = 2000;
/** How long in-flight attempts may finish on a graceful stop before they are handed back. */
export const DEFAULT_STOP_TIMEOUT_MS = 30_000;
/** How often the reconciler runs a pass. */
export const DEFAULT_RECONCILE_INTERVAL_MS = 5000;
/** How long a node may sit `queued` in PostgreSQL before the reconciler re-adds its job. */
export const DEFAULT_STALE_MS = 10_000;
/** Rows of workers whose lease lapsed longer ago than this are deleted. */
export const DEFAULT_DEAD_WORKER_RETENTION_MS = 3_600_000;
/** How long a node may wait with no live worker defining its task in its queue before it fails with AxUnknownTaskError. */
export const DEFAULT_UNKNOWN_TASK_GRACE_MS = 600_000;
/** Finished runs (and their nodes, attempts, task logs) older than this are pruned by the coordinators. */
export const DEFAULT_RETENTION_MS = 90 * 86_400_000;
/** How often a coordinator runs a retention pass (one at a time cluster-wide). */
export const DEFAULT_RETENTION_INTERVAL_MS = 3_600_000;
/** Task log lines stored per attempt; past either bound, one note says how many were dropped. */
export const TASK_LOG_MAX_LINES = 500;
export const TASK_LOG_MAX_BYTES = 64 * 1024;
/**
 * The deepest nesting of objects and arrays a payload or result may have. JSON.stringify,
 * JSON.parse and PostgreSQL's jsonb parser all recurse, and somewhere past a thousand levels one
 * of them runs out of stack (a RangeError in the caller's process, or PostgreSQL's "stack depth
 * limit exceeded"); no data passed between tasks needs a tenth of this.
 */
export const MAX_JSON_DEPTH = 256;

/** Where embedded (PGlite) history is kept when no PostgreSQL URL and no data directory are given. */
export const DEFAULT_DATA_DIR = ".ax/data";

/** Where the HTTP API (and the console) listens when no port and no host are given. */
export const DEFAULT_API_PORT = 8080;
export const DEFAULT_API_HOST = "127.0.0.1";
/** A bare /metrics endpoint listens on every interface unless told otherwise, for a scraper on another machine. */
export const DEFAULT_METRICS_HOST = "0.0.0.0";
/** The longest alert mute: an alert meant to stop for good is a trigger to turn off in runtime.yaml. */
export const MAX_ALERT_MUTE_MS = 30 * 86_400_000;
