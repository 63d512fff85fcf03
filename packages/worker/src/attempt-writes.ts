import {
  completeAttempts,
  startAttempts,
  type CompleteRequest,
  type Advanced,
  type Db,
  type StartedAttempt,
  type StartRequest,
  GroupCommit,
} from "@ax/store";

/**
 * When a recorded outcome waits for the disk. "run": only the outcomes a run cannot go on from
 * (its sinks' completions) and failures; an intermediate completion may be lost in a PostgreSQL
 * crash, and then its step runs again (WAL is flushed in order, so a later durable commit also
 * makes every earlier one durable). "step": every start and completion waits, so that a crash
 * loses no record of an attempt that ran.
 */
export type Durability = "run" | "step";

export const DEFAULT_DURABILITY: Durability = "run";

/** The hot-path writes of a worker process, each group-committed. */
export class AttemptWrites {
  private readonly starts: GroupCommit<StartRequest, StartedAttempt | undefined>;
  private readonly completions: GroupCommit<CompleteRequest, Advanced>;
  private readonly intermediate: GroupCommit<CompleteRequest, Advanced>;

  /**
   * `relaxedDb`: connections that do not wait for the disk. The fence may safely run there: a
   * start lost in a crash is recorded again when its attempt closes (`reclaimLostStart`), or its
   * node runs again if the worker is gone too. Under "step" the start waits as well.
   */
  constructor(db: Db, relaxedDb: Db, worker: string, durability: Durability) {
    this.starts = new GroupCommit((requests) => startAttempts(durability === "run" ? relaxedDb : db, worker, requests));
    this.completions = new GroupCommit((requests) => completeAttempts(db, worker, requests));
    this.intermediate =
      durability === "run" ? new GroupCommit((requests) => completeAttempts(relaxedDb, worker, requests)) : this.completions;
  }

  /** The fence: undefined means the job is a duplicate or stale. */
  start(request: StartRequest): Promise<StartedAttempt | undefined> {
    return this.starts.submit(request);
  }

  /** A node with dependants cannot end its run by succeeding, so its completion is intermediate. */
  complete(request: CompleteRequest): Promise<Advanced> {
    return (request.downstream.length > 0 ? this.intermediate : this.completions).submit(request);
  }
}
