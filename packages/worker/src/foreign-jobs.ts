import { RepeatedErrors } from "@ax/coordinator";
import type { Logger } from "pino";

export interface ForeignJob {
  runId: string;
  nodeKey: string;
  flowVersionId: number;
}

/**
 * Jobs whose run, or flow version, this worker's history does not have. Almost always another
 * ax cluster, with its own PostgreSQL history, on the same Redis prefix: each takes the other's
 * jobs and can only drop them, so both clusters' runs stall until their reconcilers re-add the
 * jobs, minutes later. Nothing else would say why, so the first such job is logged at once, then
 * once a minute with how many were dropped meanwhile (`heldBack`).
 */
export class ForeignJobs {
  private readonly warnings: RepeatedErrors;

  constructor(
    log: Logger,
    private readonly prefix: string,
  ) {
    this.warnings = new RepeatedErrors(log);
  }

  /** `missing` names what this history lacks: the job's run, or its flow version. */
  drop(job: ForeignJob, missing: "run" | "flow version"): void {
    this.warnings.warn(
      undefined,
      { runId: job.runId, node: job.nodeKey, flowVersionId: job.flowVersionId, prefix: this.prefix },
      `dropped a job whose ${missing} is not in this worker's history. Another ax cluster with its own PostgreSQL history ` +
        `(database or ?schema=) uses the same Redis prefix "${this.prefix}" and its runs stall while each takes the other's jobs: ` +
        "give each history its own prefix (--prefix / AX_PREFIX, the Runtime's prefix option). A run pruned after its job was queued leaves such a job too.",
    );
  }
}
