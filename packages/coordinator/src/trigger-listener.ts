import { firstReadyNodes, GroupCommit, runsChannel, type Listening, type Store } from "@ax/store";
import { isUuid } from "@ax/common";
import type { Logger } from "pino";
import { enqueueNodes } from "./enqueue.js";
import type { QueueRegistry } from "./queues.js";
import { RepeatedErrors } from "./repeated-errors.js";

/**
 * Enqueues the first jobs of runs created inside a producer's transaction (`triggerFlow(…,
 * { tx })`): PostgreSQL announces each such run on commit, and this listener reads its ready
 * nodes and adds their jobs, batching runs that commit together. Every coordinator listens, so
 * a run may be added twice, which its deterministic job ids make one job; a notification lost
 * to a dropped connection is left to the reconciler.
 */
export class TriggerListener {
  private listening: Listening | undefined;
  private readonly dispatch: GroupCommit<string, void>;
  private readonly errors: RepeatedErrors;

  constructor(
    private readonly store: Store,
    queues: QueueRegistry,
    private readonly log: Logger,
  ) {
    // While PostgreSQL is down each reconnect fails again: one line a minute, not one per attempt.
    this.errors = new RepeatedErrors(log);
    this.dispatch = new GroupCommit(async (runIds) => {
      await enqueueNodes(queues, await firstReadyNodes(store.db, runIds));
      return runIds.map(() => undefined);
    });
  }

  async start(): Promise<void> {
    this.listening = await this.store.listen(
      runsChannel(this.store.schema),
      (runId) => {
        if (!isUuid(runId)) return;
        this.dispatch
          .submit(runId)
          .catch((error: unknown) =>
            this.log.warn({ err: error, runId }, "could not enqueue a run created in a transaction; the reconciler will"),
          );
      },
      (error) =>
        this.errors.warn(
          error,
          {},
          "lost the connection listening for runs created in transactions; reconnecting (the reconciler enqueues what was missed)",
        ),
    );
  }

  async stop(): Promise<void> {
    await this.listening?.close();
    this.listening = undefined;
  }
}
