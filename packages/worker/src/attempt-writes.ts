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

/** The two hot-path writes of a worker process, each group-committed. */
export class AttemptWrites {
  private readonly starts: GroupCommit<StartRequest, StartedAttempt | undefined>;
  private readonly completions: GroupCommit<CompleteRequest, Advanced>;

  /** `relaxedDb`: connections that do not wait for the disk, where the fence may safely run. */
  constructor(db: Db, relaxedDb: Db, worker: string) {
    this.starts = new GroupCommit((requests) => startAttempts(relaxedDb, worker, requests));
    this.completions = new GroupCommit((requests) => completeAttempts(db, requests));
  }

  /** The fence: undefined means the job is a duplicate or stale. */
  start(request: StartRequest): Promise<StartedAttempt | undefined> {
    return this.starts.submit(request);
  }

  complete(request: CompleteRequest): Promise<Advanced> {
    return this.completions.submit(request);
  }
}
