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

/** A first node (attempt 1) as raw statements return it, with its run's priority and remaining delay. */
export interface FirstNodeRow {
  run_id: string;
  node_key: string;
  task: string;
  queue: string;
  flow_version_id: number;
  priority: number | null;
  delay_ms: number;
}

export function firstNodeOf(row: FirstNodeRow): ReadyNode {
  return {
    runId: row.run_id,
    nodeKey: row.node_key,
    task: row.task,
    queue: row.queue,
    attempt: 1,
    flowVersionId: row.flow_version_id,
    ...(row.delay_ms > 0 ? { delayMs: row.delay_ms } : {}),
    ...(row.priority ? { priority: row.priority } : {}),
  };
}
