import type { Logger } from "pino";

/** After the first, a warning at most this often, with the count dropped since the last one. */
const WARN_EVERY_MS = 60_000;

export interface ForeignJob {
  runId: string;
  nodeKey: string;
  flowVersionId: number;
}

/**
 * Jobs whose run, or flow version, this worker's history does not have. Almost always another
 * ax cluster, with its own PostgreSQL history, on the same Redis prefix: each takes the other's
 * jobs and can only drop them, so both clusters' runs stall until their reconcilers re-add the
 * jobs, minutes later. Nothing else would say why, so the first such job is logged at once and
 * then a count once a minute.
 */
export class ForeignJobs {
  private dropped = 0;
  private lastWarnAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly log: Logger,
    private readonly prefix: string,
  ) {}

  /** `missing` names what this history lacks: the job's run, or its flow version. */
  drop(job: ForeignJob, missing: "run" | "flow version"): void {
    this.dropped++;
    const now = Date.now();
    if (now - this.lastWarnAt < WARN_EVERY_MS) return;
    this.lastWarnAt = now;
    this.log.warn(
      { runId: job.runId, node: job.nodeKey, flowVersionId: job.flowVersionId, prefix: this.prefix, dropped: this.dropped },
      `dropped a job whose ${missing} is not in this worker's history. Another ax cluster with its own PostgreSQL history ` +
        `(database or ?schema=) uses the same Redis prefix "${this.prefix}" and its runs stall while each takes the other's jobs: ` +
        "give each history its own prefix (--prefix / AX_PREFIX, the Runtime's prefix option). A run pruned after its job was queued leaves such a job too.",
    );
    this.dropped = 0;
  }
}
