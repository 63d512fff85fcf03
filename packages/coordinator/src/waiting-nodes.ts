import { describeFullWorkers, servedQueues, type Db, type RunInfo, type TaskRunInfo } from "@ax/store";
import { DEFAULT_LEASE_MS } from "@ax/common";
import { nodeJobId, taskQueueName, type QueueRegistry } from "./queues.js";
import { parkedReasons, waitingReasons } from "./wake.js";

/**
 * Fills `waitingFor` of the run's nodes that are due to start but have not: the limit their
 * task's queue is held by (as the workers that skipped it last reported), or the fact that no
 * live worker serves their queue, or that every worker serving it has all its slots taken. A node
 * simply waiting its turn while some worker has a free slot keeps null.
 */
export async function explainWaitingNodes(db: Db, queues: QueueRegistry, run: RunInfo): Promise<RunInfo> {
  const now = Date.now();
  const due = run.tasks.filter(
    (t) =>
      t.waitingFor === null &&
      (t.status === "queued" || (t.status === "retrying" && t.nextRetryAt !== null && Date.parse(t.nextRetryAt) <= now)),
  );
  if (due.length === 0) return run;
  const names = [...new Set(due.map((t) => taskQueueName(t.queue, t.task)))];
  const jobId = (t: TaskRunInfo) => nodeJobId(run.id, t.key, Math.max(1, t.attempts.length + 1));
  const [reasons, parked, served] = await Promise.all([
    waitingReasons(queues.connection, queues.prefix, names),
    parkedReasons(queues.connection, queues.prefix, due.map(jobId)),
    servedQueues(db, DEFAULT_LEASE_MS),
  ]);
  const groups = new Set([...served.keys()].map((name) => name.slice(0, name.indexOf("."))));
  const explain = (t: TaskRunInfo): string | null => {
    const name = taskQueueName(t.queue, t.task);
    const slots = served.get(name);
    if (slots) return parked.get(jobId(t)) ?? reasons.get(name) ?? (slots.full ? describeFullWorkers(slots) : null);
    const { queue, task } = t;
    return groups.has(queue) ? `no worker defines task ${task} in queue ${queue}` : `no worker serves queue ${queue}`;
  };
  const explained = new Set(due);
  return { ...run, tasks: run.tasks.map((t) => (explained.has(t) ? { ...t, waitingFor: explain(t) } : t)) };
}
