import {
  completeAttempts,
  startAttempts,
  type CompleteRequest,
  type Completed,
  type Db,
  type StartedAttempt,
  type StartRequest,
  GroupCommit,
} from "@ax/store";

/** The two hot-path writes of a worker process, each group-committed. */
export class AttemptWrites {
  private readonly starts: GroupCommit<StartRequest, StartedAttempt | undefined>;
  private readonly completions: GroupCommit<CompleteRequest, Completed>;

  constructor(db: Db, worker: string) {
    this.starts = new GroupCommit((requests) => startAttempts(db, worker, requests));
    this.completions = new GroupCommit((requests) => completeAttempts(db, requests));
  }

  /** The fence: undefined means the job is a duplicate or stale. */
  start(request: StartRequest): Promise<StartedAttempt | undefined> {
    return this.starts.submit(request);
  }

  complete(request: CompleteRequest): Promise<Completed> {
    return this.completions.submit(request);
  }
}
