import { enqueueNodes, type QueueRegistry } from "@ax/coordinator";
import { handBackAttempts, msUntil, within, type Db, type TaskFailure } from "@ax/store";
import { AxWorkerStoppedError } from "@ax/common";
import type { Logger } from "pino";
import type { InFlightAttempts } from "./cancel-listener.js";

export interface HandBack {
  db: Db;
  queues: QueueRegistry;
  workerId: string;
  inFlight: InFlightAttempts;
  log: Logger;
  timeoutMs: number;
  /** `Date.now()` past which nothing is awaited any more. */
  deadline: number;
}

/**
 * Closes the attempts still in flight at the stop deadline as `crashed` and queues their nodes
 * again at once, then aborts their signals. The write comes first, so an attempt that settles on
 * its abort finds its node moved on and records nothing. When PostgreSQL cannot be reached in
 * time the attempts stay `running`, and the reconciler takes them over once this worker's lease
 * lapses. The new jobs are added best effort: the reconciler re-adds what Redis lacks.
 */
export async function handBackInFlight(o: HandBack): Promise<void> {
  const refs = o.inFlight.attempts();
  const error = new AxWorkerStoppedError(o.workerId, o.timeoutMs);
  const failure: TaskFailure = { name: error.name, message: error.message, stack: null, kind: "crashed" };
  const written = await within(handBackAttempts(o.db, o.workerId, refs, failure), msUntil(o.deadline));
  o.inFlight.abortAll(error);
  if (!written.done) {
    o.log.warn(
      { err: written.error, attempts: refs.length },
      "could not hand back in-flight attempts in time; they are retried once this worker's lease lapses",
    );
    return;
  }
  const nodes = written.value;
  o.log.warn({ attempts: refs.length, handedBack: nodes.length }, "stop timeout reached: in-flight attempts aborted and handed back");
  const added = await within(enqueueNodes(o.queues, nodes), msUntil(o.deadline));
  if (!added.done) o.log.warn({ err: added.error, nodes: nodes.length }, "could not re-add handed-back jobs in time; the reconciler will");
}
