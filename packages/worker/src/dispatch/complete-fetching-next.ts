import { Job, type JobJsonRaw } from "bullmq";
import type { Logger } from "pino";
import type { NodeJobData } from "@ax/coordinator";
import { idle, type QueueState } from "./queue-state.js";

/**
 * A slot may take its queue's next job with the completion of the last (one Redis call for
 * both, as BullMQ's own worker does) when the task holds no limit, so no permit is needed, and
 * no other queue may have work: otherwise the slot goes back to the round robin, keeping a
 * backlog in one queue from starving the others.
 */
export function mayFetchNext(state: QueueState, states: readonly QueueState[], stopping: boolean): boolean {
  if (stopping || state.limited || state.block.blocks(Date.now())) return false;
  const now = Date.now();
  return states.every((s) => s === state || s.idleUntil > now || s.block.blocks(now));
}

export async function completeFetchingNext(
  state: QueueState,
  job: Job<NodeJobData>,
  token: string,
  log: Logger,
): Promise<Job<NodeJobData> | undefined> {
  const wakes = state.wakes;
  const startedAt = Date.now();
  let answer: unknown;
  try {
    answer = await job.moveToCompleted(null, token, true);
  } catch (err) {
    log.debug({ err, jobId: job.id }, "could not close the BullMQ job; it is cleaned up as stalled");
    return undefined;
  }
  // BullMQ answers the next job, or why there is none: [0, 0, rate limit delay, next delayed job's due time].
  const [data, id, , delayUntil] = Array.isArray(answer)
    ? (answer as [JobJsonRaw | 0 | undefined, string | 0 | undefined, unknown, unknown])
    : [];
  if (!data || !id) {
    if (state.wakes === wakes) idle(state, startedAt, typeof delayUntil === "number" ? delayUntil : 0);
    return undefined;
  }
  return Job.fromJSON<NodeJobData>(state.worker, data, id);
}
