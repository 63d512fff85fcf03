import type { Json, RunStatus, TaskStatus } from "../types.js";
import type { ReadyNode } from "../repositories/ready-node.js";

export interface AttemptRef {
  runId: string;
  nodeKey: string;
  attempt: number;
}

/**
 * When an attempt's function ended, by PostgreSQL's clock: its `startedAt` plus the time its
 * worker measured. A closing write records the earlier of this and its own time, so an outcome
 * held back (PostgreSQL down, the write retried) does not count the wait as the attempt's run
 * time. Without it the write's own time is recorded.
 */
export interface AttemptEnd {
  endedAt?: Date | undefined;
}

export interface StartRequest extends AttemptRef {
  upstreamKeys: string[];
  /**
   * This worker may hold the attempt already (a start whose reply was lost): answer it as started
   * again. Only such starts pay for the lookup; a first start that finds its own attempt running
   * answers undefined, and the fence asks again with `resume`.
   */
  resume?: boolean;
}

export interface StartedAttempt {
  flow: string;
  payload: Json;
  businessKey: string | null;
  /** The run's schedule tick (ISO), null for runs not triggered by a schedule. */
  logicalDate: string | null;
  /** The first run of this run's chain of reruns: the run itself unless it is a rerun. */
  originalRunId: string;
  queuedAt: Date | null;
  startedAt: Date;
  /** True when this attempt moved the run from `pending` to `running`. */
  runStarted: boolean;
  /** Results of the upstream nodes asked for, by node key. */
  upstream: Record<string, Json>;
}

export interface CompleteRequest extends AttemptRef, AttemptEnd {
  result: Json;
  downstream: string[];
  /**
   * A dependant the completing worker runs next itself if this completion makes it ready (local
   * continuation): its attempt 1 starts in the same statement, under that worker.
   */
  continueWith?: { nodeKey: string; upstreamKeys: string[] } | undefined;
}

/** A dependant's first attempt, started by the completion that made it ready. */
export interface ContinuedAttempt extends StartedAttempt {
  nodeKey: string;
  attempt: number;
}

/** What a transition that ends a node did to its run. */
export interface Advanced {
  /** False when the fence matched nothing: the attempt was already closed elsewhere (cancel, takeover). */
  applied: boolean;
  /** Dependants this change made ready (each reported once, to the completion that freed it). */
  ready: ReadyNode[];
  /** The run's status after this change, when it just became terminal. */
  runFinished: RunStatus | null;
  /** The `continueWith` dependant, when this completion made it ready and started it. */
  continued?: ContinuedAttempt | undefined;
}

export interface RunningAttempt {
  flow: string;
  businessKey: string | null;
  status: string;
  attempt: number;
  worker: string | null;
  /** True when the attempt's worker has not heartbeated within the lease (or is unknown), or gave the attempt up. */
  workerLost: boolean;
  /** True when its worker could not record the outcome and gave the attempt up. */
  abandoned: boolean;
  /** How long until the worker's lease lapses unless it heartbeats again; 0 once lost. */
  leaseLeftMs: number;
  /** Since the attempt started, by PostgreSQL's clock; null when it has no row. */
  runningMs: number | null;
}

export interface WaitingNode {
  /** True when the node waits for exactly this attempt to start (`queued`, or `retrying` for it). */
  waiting: boolean;
  /** How long it has been due to start, by PostgreSQL's clock: since queued, or since its retry fell due. */
  dueForMs: number;
}

/** A node of a cancelled run whose BullMQ job (if any) should leave Redis. */
export interface CancelledNode {
  nodeKey: string;
  queue: string;
  task: string;
  /** The attempt its job was enqueued for; 0 means it never had a job. */
  attempt: number;
  /** Its status just before the cancel (`cancelled` when the run had been cancelled before). */
  previous: TaskStatus;
}

export type RunCancellation =
  | { found: false }
  | {
      found: true;
      /** False when the run was already terminal: nothing changed. */
      cancelled: boolean;
      status: RunStatus;
      /** Nodes cancelled now, or every cancelled node of a run cancelled earlier. */
      nodes: CancelledNode[];
      /** Set when cancelled now (for the `run_cancelled` event). */
      flow?: string;
      businessKey?: string | null;
    };
