import { Queue } from "bullmq";
import type { Redis } from "ioredis";

/** What a node's BullMQ job carries: enough to find everything else in PostgreSQL. */
export interface NodeJobData {
  runId: string;
  nodeKey: string;
  attempt: number;
  flowVersionId: number;
}

/** Deterministic per attempt, so adding the same attempt twice is a no-op in BullMQ. */
export function nodeJobId(runId: string, nodeKey: string, attempt: number): string {
  return `${runId}.${nodeKey}.${attempt}`;
}

/** One BullMQ `Queue` per worker group, sharing one Redis connection. */
export class QueueRegistry {
  private readonly queues = new Map<string, Queue<NodeJobData>>();

  constructor(
    /** Also carries cluster messages such as cancels (a publish needs no dedicated connection). */
    readonly connection: Redis,
    readonly prefix: string,
  ) {}

  get(name: string): Queue<NodeJobData> {
    let queue = this.queues.get(name);
    if (!queue) {
      queue = new Queue<NodeJobData>(name, { connection: this.connection, prefix: this.prefix });
      this.queues.set(name, queue);
    }
    return queue;
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close()));
    this.queues.clear();
  }
}
