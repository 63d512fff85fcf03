import { admitHeldRuns, flowsWithHeldRuns, type Db } from "@ax/store";
import type { Logger } from "pino";
import { cancelRun } from "./cancel.js";
import { enqueueNodes } from "./enqueue.js";
import type { QueueRegistry } from "./queues.js";
import { RepeatedErrors } from "./repeated-errors.js";

export interface AdmissionDeps {
  db: Db;
  queues: QueueRegistry;
}

/**
 * Releases what the flow's free slots allow of its held runs and enqueues their first nodes;
 * cancels the runs a key's strategy says to (`cancel_newest`, `cancel_in_progress`).
 */
export async function admitFlow(deps: AdmissionDeps, flow: string): Promise<number> {
  const { ready, cancel } = await admitHeldRuns(deps.db, flow);
  await enqueueNodes(deps.queues, ready);
  for (const run of cancel) await cancelRun(deps, run.runId, run.reason);
  return new Set(ready.map((n) => n.runId)).size;
}

export interface AdmissionOptions {
  /** How often held runs are checked against finished ones. @defaultValue 250 */
  intervalMs?: number;
}

/**
 * The coordinator's admission loop: runs held by `maxConcurrentRuns` or a backfill's cap start
 * when earlier runs finish. Polling keeps the completion path (the hot path) free of any cap
 * logic; with no held runs a pass is one indexed read.
 */
export class Admission {
  private timer: NodeJS.Timeout | undefined;
  private pass: Promise<number> | undefined;
  private readonly errors: RepeatedErrors;

  constructor(
    private readonly deps: AdmissionDeps,
    log: Logger,
    private readonly options: AdmissionOptions = {},
  ) {
    this.errors = new RepeatedErrors(log);
  }

  start(): void {
    const interval = this.options.intervalMs ?? 250;
    const tick = () => {
      this.pass = this.runOnce().catch((error) => {
        this.errors.warn(error, {}, "admission pass failed; will retry");
        return 0;
      });
      void this.pass.finally(() => {
        if (this.timer) this.timer = setTimeout(tick, interval);
      });
    };
    this.timer = setTimeout(tick, interval);
  }

  /** One pass over every flow with held runs; returns how many runs were released. */
  async runOnce(): Promise<number> {
    let released = 0;
    for (const flow of await flowsWithHeldRuns(this.deps.db)) {
      // One flow failing (its cancel or enqueue) must not keep the flows after it from being admitted.
      released += await admitFlow(this.deps, flow).catch((error: unknown) => {
        this.errors.warn(error, { flow }, "could not admit a flow's held runs; will retry");
        return 0;
      });
    }
    return released;
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.pass;
  }
}
