import { GroupCommit, type ReadyNode } from "@ax/store";
import type { Logger } from "pino";
import { nodeJobId, taskQueueName, type QueueRegistry } from "./queues.js";
import { publishWake } from "./wake.js";

/**
 * How long a committed write waits for its jobs to reach Redis before answering anyway. ioredis
 * (with `maxRetriesPerRequest: null`, as BullMQ needs) queues commands for as long as Redis is
 * away, so without a bound a trigger would hang for the whole outage.
 */
export const DISPATCH_WAIT_MS = 1000;

/**
 * Puts ready nodes in their BullMQ queues. Job ids are deterministic, so a node enqueued twice
 * (by a retried write, or by the reconciler) is one job; jobs leave Redis when done because
 * PostgreSQL keeps the history.
 */
export async function enqueueNodes(queues: QueueRegistry, nodes: ReadyNode[]): Promise<void> {
  if (nodes.length === 0) return;
  const byQueue = new Map<string, ReadyNode[]>();
  for (const node of nodes) {
    const name = taskQueueName(node.queue, node.task);
    const list = byQueue.get(name) ?? [];
    list.push(node);
    byQueue.set(name, list);
  }
  await Promise.all(
    [...byQueue].map(([name, list]) => {
      const queue = queues.get(name);
      const jobs = list.map(jobOf);
      // One job (a run triggered alone, a retry) skips addBulk's MULTI/EXEC pipeline, whose
      // ioredis object alone cost about a tenth of a lone trigger's CPU.
      if (jobs.length === 1) return queue.add(jobs[0]!.name, jobs[0]!.data, jobs[0]!.opts);
      return queue.addBulk(jobs);
    }),
  );
  // Jobs due now wake one worker through BullMQ's marker (see the worker's `MarkerWatch`). A
  // delayed job's marker holds only the soonest due time of its queue and is taken by one worker,
  // so every worker is told when each batch of retries falls due. After the add: BullMQ dates a
  // delayed job when it builds it, and a worker that fetched before that date plus the delay
  // would find nothing due and sleep a whole poll.
  const now = Date.now();
  const wakes = [...byQueue].flatMap(([name, list]) => {
    const soonest = Math.min(...list.map((n) => n.delayMs ?? 0));
    return soonest > 0 ? [{ queue: name, at: now + soonest, jobs: list.length }] : [];
  });
  await publishWake(queues.connection, queues.prefix, wakes);
}

/**
 * For jobs whose rows PostgreSQL has already committed (a rerun, a backfill's admitted runs):
 * waits at most `waitMs` for `dispatch` and never throws, so that a Redis outage neither hangs the
 * caller nor fails a call that did its work (a caller retrying it would write a second rerun or
 * backfill). What did not reach Redis the reconciler adds once its node has been queued past
 * `staleMs`. Answers whether the jobs arrived in time.
 */
export async function dispatchCommitted(dispatch: Promise<unknown>, waitMs = DISPATCH_WAIT_MS): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), waitMs);
  });
  const arrived = dispatch.then(
    () => true,
    () => false,
  );
  try {
    return await Promise.race([arrived, late]);
  } finally {
    clearTimeout(timer);
  }
}

function jobOf(n: ReadyNode) {
  // No spread for the optional priority: in Node 20 each property after a spread costs about 0.5 µs, per job.
  const opts: { jobId: string; delay: number; removeOnComplete: true; removeOnFail: true; priority?: number } = {
    jobId: nodeJobId(n.runId, n.nodeKey, n.attempt),
    delay: n.delayMs ?? 0,
    removeOnComplete: true,
    removeOnFail: true,
  };
  if (n.priority) opts.priority = n.priority;
  return { name: n.task, data: { runId: n.runId, nodeKey: n.nodeKey, attempt: n.attempt, flowVersionId: n.flowVersionId }, opts };
}

/**
 * The nodes whose job is not in Redis at all (one pipelined EXISTS per node), so that a long but
 * healthy backlog is not re-added on every reconcile pass.
 */
export async function jobsMissingFromRedis(queues: QueueRegistry, nodes: ReadyNode[]): Promise<ReadyNode[]> {
  if (nodes.length === 0) return [];
  const pipeline = queues.connection.pipeline();
  for (const n of nodes) pipeline.exists(queues.forNode(n).toKey(nodeJobId(n.runId, n.nodeKey, n.attempt)));
  const answers = (await pipeline.exec()) ?? [];
  return nodes.filter((_, i) => {
    const [error, exists] = answers[i] ?? [null, 0];
    return error !== null || exists === 0;
  });
}

/** Enqueues from many callers at once go to Redis together (one pipeline per queue per batch). */
export class BatchedEnqueue {
  private readonly batches: GroupCommit<ReadyNode[], void>;

  constructor(
    queues: QueueRegistry,
    private readonly log: Logger,
  ) {
    this.batches = new GroupCommit(async (lists) => {
      await enqueueNodes(queues, lists.flat());
      return lists.map(() => undefined);
    });
  }

  add(nodes: ReadyNode[]): Promise<void> {
    return nodes.length === 0 ? Promise.resolve() : this.batches.submit(nodes);
  }

  /**
   * Best effort, for nodes whose rows PostgreSQL has already committed as `queued`: waits at
   * most `waitMs` and never throws. A job that does not reach Redis (it is down, full, or the
   * command fails) is re-added by the reconciler once its node has been queued past `staleMs`.
   */
  async dispatch(nodes: ReadyNode[], waitMs = DISPATCH_WAIT_MS): Promise<void> {
    if (nodes.length === 0) return;
    const runs = [...new Set(nodes.map((n) => n.runId))];
    let toldLate = false;
    const added = this.add(nodes).catch((error: unknown) => {
      // After "did not answer in time", the add failing later (often its connection closed at
      // exit) tells the reader nothing new.
      const level = toldLate ? "debug" : "warn";
      this.log[level]({ err: error, runs }, "jobs of committed runs did not reach Redis; the reconciler will add them");
    });
    if (!(await dispatchCommitted(added, waitMs))) {
      toldLate = true;
      this.log.warn({ runs, waitMs }, "Redis did not answer in time; the jobs are added when it is back, or by the reconciler");
    }
  }
}
