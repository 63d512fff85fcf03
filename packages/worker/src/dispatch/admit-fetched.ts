import type { Job } from "bullmq";
import type { Logger } from "pino";
import type { LimitGate, NodeJobData, Permit } from "@ax/coordinator";
import type { Admission } from "./keyed-admission.js";
import type { QueueState } from "./queue-state.js";

/** A job taken from its queue, with the limits it holds while it runs. */
export interface Fetched {
  job: Job<NodeJobData>;
  permit: Permit | undefined;
  releaseKeyed: (() => Promise<void>) | undefined;
  /** Admitted holding a slot of its business key's `concurrency`. */
  holdsKey: boolean;
}

/** What admission uses of `DispatcherOptions`. */
export interface AdmitOptions {
  gate: LimitGate;
  admit?: ((job: Job<NodeJobData>, token: string, queue: string) => Promise<Admission>) | undefined;
  log: Logger;
}

/** Limits per key for a job just taken; undefined when it may not run now (its permit, if any, given back). */
export async function admitFetched(
  o: AdmitOptions,
  state: QueueState,
  job: Job<NodeJobData>,
  token: string,
  permit: Permit | undefined,
): Promise<Fetched | undefined> {
  const admission = await admit(o, state, job, token);
  if (admission.ok) return { job, permit, releaseKeyed: admission.release, holdsKey: admission.holdsKey ?? false };
  if (permit) await o.gate.release(permit, { unused: true }).catch(() => undefined);
  if (admission.finish === "complete") {
    await job.moveToCompleted(null, token, false).catch((err) => o.log.debug({ err, jobId: job.id }, "could not close a cancelled job"));
  }
  return undefined;
}

/** A job whose admission could not be decided (Redis refused) stays locked and comes back as stalled. */
async function admit(o: AdmitOptions, state: QueueState, job: Job<NodeJobData>, token: string): Promise<Admission> {
  if (!o.admit) return { ok: true };
  try {
    return await o.admit(job, token, state.name);
  } catch (err) {
    o.log.warn(
      { err, jobId: job.id, queue: state.name },
      "could not check the job's limits per key; it is fetched again once its lock lapses",
    );
    return { ok: false, finish: "none" };
  }
}
