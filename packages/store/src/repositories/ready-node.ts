/** A node that PostgreSQL says should be in the hot queue: what an enqueue needs to know. */
export interface ReadyNode {
  runId: string;
  nodeKey: string;
  task: string;
  queue: string;
  attempt: number;
  flowVersionId: number;
  /** Milliseconds to wait before the job may start (retry backoff). */
  delayMs?: number;
  /** The run's BullMQ priority (1 = highest); unset = BullMQ's default. */
  priority?: number | undefined;
}
