import type { Queue } from "bullmq";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { within } from "@ax/store";
import { isUuid, lazyRequire } from "@ax/common";
import { EventPublisher } from "./events/publisher.js";

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

/** The run a job id of `nodeJobId` names; undefined for any other id. */
export function runIdOfJob(jobId: string): string | undefined {
  const runId = jobId.slice(0, jobId.indexOf("."));
  return isUuid(runId) ? runId : undefined;
}

/**
 * The BullMQ queue of one task in one worker group. Each task has its own queue so that workers
 * can take work across tasks in turn (a backlog of one task never holds another's jobs behind it)
 * and skip a task whose limit is reached without fetching its jobs. Group names cannot contain
 * `.`, so the first `.` separates them from the task name.
 */
export function taskQueueName(group: string, task: string): string {
  return `${group}.${task}`;
}

const bullmq = lazyRequire<typeof import("bullmq")>(import.meta.url, "bullmq");

/** One BullMQ `Queue` per task queue, sharing one Redis connection. */
export class QueueRegistry {
  private readonly queues = new Map<string, Queue<NodeJobData>>();
  /** The cluster's lifecycle events, batched onto its stream over the shared connection. */
  readonly events: EventPublisher;

  constructor(
    /** Also carries cluster messages such as cancels (a publish needs no dedicated connection). */
    readonly connection: Redis,
    readonly prefix: string,
    /** Where the queues' connection errors go. */
    readonly log: Logger,
  ) {
    this.events = new EventPublisher(connection, prefix, log);
  }

  /** The queue a node's jobs go to: its task's queue in its worker group. */
  forNode(node: { queue: string; task: string }): Queue<NodeJobData> {
    return this.get(taskQueueName(node.queue, node.task));
  }

  get(name: string): Queue<NodeJobData> {
    let queue = this.queues.get(name);
    if (!queue) {
      queue = new (bullmq().Queue)<NodeJobData>(name, {
        connection: this.connection,
        prefix: this.prefix,
        // The server was checked once at start (`checkRedisVersion`); BullMQ would check it again per queue, warning in plain text.
        skipVersionCheck: true,
        // Commands wait in the shared connection's offline queue anyway. A queue that waited for
        // "ready" itself rejects that wait when the connection is closed mid-connect (Redis down at
        // close), after closing the queue removed its listeners: an unhandled rejection.
        skipWaitingForReady: true,
      });
      // The shared connection's errors are logged once where it was opened (connectRedis).
      queue.on("error", (err) => this.log.debug({ err, queue: name }, "BullMQ queue error"));
      this.queues.set(name, queue);
    }
    return queue;
  }

  /** Closes every queue, giving up on those still busy after `timeoutMs` (Redis unreachable). */
  async close(timeoutMs = 5000): Promise<void> {
    const queues = [...this.queues.values()];
    this.queues.clear();
    await within(this.events.flush(), timeoutMs);
    await within(Promise.all(queues.map((q) => q.close())), timeoutMs);
  }
}
