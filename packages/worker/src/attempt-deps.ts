// What an attempt needs from its worker, and the shapes the attempt modules pass between them.
import type { AttemptRef, Db, ReadyNode, StartedAttempt } from "@ax/store";
import type { BatchedEnqueue, EventPublisher, NodeJobData } from "@ax/coordinator";
import type { Logger } from "pino";
import type { AttemptWrites } from "./attempt-writes.js";
import type { DagCache } from "./dag-cache.js";
import type { ForeignJobs } from "./foreign-jobs.js";
import type { WorkerMetrics } from "./metrics.js";
import type { AttemptStore } from "./once-scope.js";
import type { TaskLogWriter } from "./task-logs.js";
import type { ResolvedTaskOptions, TaskSource } from "./task-definition.js";

export interface AttemptDeps {
  db: Db;
  dags: DagCache;
  tasks: TaskSource;
  workerId: string;
  log: Logger;
  metrics: WorkerMetrics;
  /** A running attempt whose worker missed heartbeats this long is presumed crashed. */
  leaseMs: number;
  /** Attempts this process is executing now (`run/node/attempt`). */
  executing: Set<string>;
  /** Group-committed fence and completion writes. */
  writes: AttemptWrites;
  /** Newly ready and retrying nodes' jobs, added to Redis together. */
  jobs: Pick<BatchedEnqueue, "add">;
  /** Lifecycle events, to the cluster's stream (buffered: publishing never waits on Redis). */
  events: Pick<EventPublisher, "publish">;
  /** Where `ax.context().log` lines are stored. */
  taskLogs: TaskLogWriter;
  /** Where this worker's attempts claim `ax.once` keys. */
  onceStore: AttemptStore;
  /** Where jobs this history has no run for are dropped, and said to be. */
  foreignJobs: ForeignJobs;
  /**
   * Whether a node this attempt made ready may start in this process at once (local continuation)
   * instead of going through Redis: its task is served here and holds no limits.
   */
  continuesHere?: ((node: ReadyNode) => boolean) | undefined;
}

/** One attempt to run: a BullMQ job's data, or a node an attempt of this process made ready. */
export interface AttemptJob extends NodeJobData {
  /** The run's BullMQ priority, kept by the jobs its attempts add. */
  priority?: number | undefined;
  /** Set when the completion that made the node ready also started it: no fence of its own. */
  started?: StartedAttempt | undefined;
}

/** The node to run next in this process, started already or to be fenced. */
export type Next = Omit<AttemptJob, "priority">;

/** The run a job belongs to, as events and logs name it. */
export interface RunMeta {
  runId: string;
  flow: string;
  businessKey: string | null;
}

export type FailurePolicy = Pick<
  ResolvedTaskOptions,
  "retries" | "retryBackoffMs" | "backoff" | "jitter" | "maxBackoffMs" | "retryOn" | "noRetryOn" | "onFailure"
>;

/** How `AttemptDeps.executing` names an attempt. */
export const attemptKey = (ref: AttemptRef) => `${ref.runId}/${ref.nodeKey}/${ref.attempt}`;
