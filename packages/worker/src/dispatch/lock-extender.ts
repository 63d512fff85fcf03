import type { Job } from "bullmq";
import type { Logger } from "pino";
import type { NodeJobData } from "@ax/coordinator";

/**
 * Extends the locks of running jobs: with manual fetching BullMQ's worker does not, and a job
 * whose lock lapses is taken for stalled.
 */
export class LockExtender {
  private readonly active = new Map<string, Job<NodeJobData>>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly lockDurationMs: number,
    private readonly log: Logger,
  ) {}

  start(): void {
    this.timer = setInterval(() => this.extend(), Math.max(100, Math.floor(this.lockDurationMs / 2)));
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  add(token: string, job: Job<NodeJobData>): void {
    this.active.set(token, job);
  }

  delete(token: string): void {
    this.active.delete(token);
  }

  private extend(): void {
    for (const [token, job] of this.active) {
      job.extendLock(token, this.lockDurationMs).catch((err) => this.log.warn({ err, jobId: job.id }, "could not extend a job's lock"));
    }
  }
}
