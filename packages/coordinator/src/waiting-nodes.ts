import {
  coordinatorAlive,
  describeFullWorkers,
  describeServedElsewhere,
  queuesServedElsewhere,
  servedQueues,
  within,
  type Db,
  type RunInfo,
  type TaskRunInfo,
} from "@ax/store";
import { DEFAULT_LEASE_MS } from "@ax/common";
import { nodeJobId, taskQueueName, type QueueRegistry } from "./queues.js";
import { parkedReasons, waitingReasons } from "./wake.js";

/** How long a run's reader waits for Redis to say which limit holds a node. */
const REDIS_WAIT_MS = 1000;

/** What a due node of a served queue waits for while Redis does not answer: no worker can take its job. */
export const WAITING_FOR_REDIS = "Redis, which does not answer: a worker takes the job once it is back";

/**
 * What a due node whose job is not in Redis waits for when no coordinator runs: only a
 * coordinator's reconciler queues such a job (a trigger inside the caller's transaction, Redis
 * data lost), so it would otherwise look like a node waiting its turn.
 */
export const WAITING_FOR_COORDINATOR =
  "a coordinator: its job is not in Redis and no coordinator is running to queue it (start one: ax coordinator)";

/**
 * Fills `waitingFor` of the run's nodes that are due to start but have not: the limit their
 * task's queue is held by (as the workers that skipped it last reported), or the fact that no
 * live worker serves their queue, or that every worker serving it has all its slots taken. A node
 * simply waiting its turn while some worker has a free slot keeps null. A pending run takes the
 * reason of its first held node, with the node's key.
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
  // A run's states come from PostgreSQL: with Redis unreachable (a command queued behind a
  // reconnect waits for it), the run is still answered, its waiting nodes saying that is what holds them.
  const [reasons, parked, served] = await Promise.all([
    within(waitingReasons(queues.connection, queues.prefix, names), REDIS_WAIT_MS),
    within(parkedReasons(queues.connection, queues.prefix, due.map(jobId)), REDIS_WAIT_MS),
    servedQueues(db, DEFAULT_LEASE_MS, queues.prefix),
  ]);
  const unserved = names.some((name) => !served.has(name));
  const elsewhere = unserved ? await queuesServedElsewhere(db, DEFAULT_LEASE_MS, queues.prefix) : new Map();
  const limits = reasons.done && parked.done ? { reasons: reasons.value, parked: parked.value } : undefined;
  const groups = new Set([...served.keys()].map((name) => name.slice(0, name.indexOf("."))));
  const explain = (t: TaskRunInfo): string | null => {
    const name = taskQueueName(t.queue, t.task);
    const slots = served.get(name);
    if (!slots) {
      const { queue, task } = t;
      const other = elsewhere.get(name);
      if (other) return describeServedElsewhere(queue, queues.prefix, other);
      // Workers pick their tasks' queues when they start: a queue moved in runtime.yaml since is
      // served only by workers started after the move.
      const movedFrom = [...served.keys()].filter((n) => n.endsWith(`.${task}`)).map((n) => n.slice(0, n.indexOf(".")));
      if (movedFrom.length > 0) {
        return `no worker serves task ${task} in queue ${queue} yet (live workers run it in ${movedFrom.join(", ")}): restart workers with --queues ${queue} to pick up the queue from the configuration`;
      }
      return groups.has(queue) ? `no worker defines task ${task} in queue ${queue}` : `no worker serves queue ${queue}`;
    }
    if (!limits) return WAITING_FOR_REDIS;
    return limits.parked.get(jobId(t)) ?? limits.reasons.get(name) ?? (slots.full ? describeFullWorkers(slots) : null);
  };
  const explanations = new Map(due.map((t) => [t, explain(t)]));
  if (limits) {
    const unexplained = due.filter((t) => explanations.get(t) === null);
    for (const t of await withoutJob(db, queues, unexplained, jobId)) explanations.set(t, WAITING_FOR_COORDINATOR);
  }
  const tasks = run.tasks.map((t) => (explanations.has(t) ? { ...t, waitingFor: explanations.get(t)! } : t));
  // A pending run none of whose nodes has started waits for what holds its first nodes: said on the
  // run too, where the run list and the run's header look.
  const held = run.status === "pending" && run.waitingFor === null ? tasks.find((t) => t.waitingFor !== null) : undefined;
  return { ...run, tasks, waitingFor: held ? `${held.waitingFor} (${held.key})` : run.waitingFor };
}

/**
 * Of `nodes`, those whose job Redis does not hold, when no coordinator runs to queue it; none
 * when one runs (its next pass queues the job) or Redis does not answer in time.
 */
async function withoutJob(db: Db, queues: QueueRegistry, nodes: TaskRunInfo[], jobId: (t: TaskRunInfo) => string): Promise<TaskRunInfo[]> {
  if (nodes.length === 0) return [];
  const pipeline = queues.connection.pipeline();
  for (const t of nodes) pipeline.exists(queues.forNode({ queue: t.queue, task: t.task }).toKey(jobId(t)));
  const answered = await within(pipeline.exec(), REDIS_WAIT_MS);
  if (!answered.done) return [];
  const missing = nodes.filter((_, i) => answered.value?.[i]?.[1] === 0);
  if (missing.length === 0 || (await coordinatorAlive(db, DEFAULT_LEASE_MS))) return [];
  return missing;
}
