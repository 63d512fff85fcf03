import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { Worker, type Job } from "bullmq";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { heartbeatWorker, removeWorker, type Db } from "@ax/store";
import { BatchedEnqueue, type NodeJobData, type QueueRegistry } from "@ax/coordinator";
import { CancelListener, InFlightAttempts } from "./cancel-listener.js";
import { AttemptWrites } from "./attempt-writes.js";
import { DagCache } from "./dag-cache.js";
import { closeExecutors } from "./executors/index.js";
import type { WorkerMetrics } from "./metrics.js";
import { withAttemptStore } from "./once-scope.js";
import { runAttempt, type AttemptDeps } from "./run-attempt.js";
import type { TaskSource } from "./task-definition.js";

export interface NodeWorkerOptions {
  db: Db;
  /** Connections whose commits do not wait for the disk (`Store.relaxed`), for the attempt fence. @defaultValue db */
  relaxedDb?: Db | undefined;
  connection: Redis;
  queues: QueueRegistry;
  /** Worker groups (BullMQ queues) this process serves. @defaultValue ["default"] */
  queueNames: string[];
  /** Attempts at once in this process, split evenly across its queues. @defaultValue 10 */
  concurrency: number;
  tasks: TaskSource;
  log: Logger;
  metrics: WorkerMetrics;
  /** How often this process renews its lease in PostgreSQL. @defaultValue 1000 */
  heartbeatMs?: number | undefined;
  /** Attempts of a worker silent this long are presumed crashed. @defaultValue 5000 */
  leaseMs?: number | undefined;
  /**
   * BullMQ job lock; a dead worker's jobs come back within this plus `stalledIntervalMs`, and
   * are taken over once `leaseMs` has passed too. The defaults retry a killed worker's attempts
   * within 10 s, retry backoff included. An inline task blocking the event loop longer than this
   * loses its lock. @defaultValue 5000
   */
  lockDurationMs?: number | undefined;
  /** How often BullMQ looks for jobs whose lock lapsed. @defaultValue 2000 */
  stalledIntervalMs?: number | undefined;
  /**
   * A job whose task this process does not define (a rolling deploy) is handed back to its queue
   * for a worker that defines it, consuming no attempt; its node fails with `AxUnknownTaskError`
   * only once it has waited this long (measured in PostgreSQL from when it became due).
   * @defaultValue 600000
   */
  unknownTaskGraceMs?: number | undefined;
}

/** The worker role: one BullMQ Worker per queue, executing attempts and advancing the DAG. */
export class NodeWorker {
  readonly id = `${hostname()}-${process.pid}-${randomBytes(3).toString("hex")}`;
  private readonly workers: Worker<NodeJobData>[] = [];
  private heartbeat: NodeJS.Timeout | undefined;
  private readonly inFlight = new InFlightAttempts();
  private cancels: CancelListener | undefined;

  constructor(private readonly options: NodeWorkerOptions) {}

  async start(): Promise<void> {
    const o = this.options;
    const identity = { id: this.id, hostname: hostname(), pid: process.pid, queues: o.queueNames };
    await heartbeatWorker(o.db, identity);
    const log = o.log.child({ worker: this.id });
    const cancels = new CancelListener(o.connection, o.queues.prefix, o.db, this.inFlight, log);
    this.cancels = cancels;
    await cancels.start();
    this.heartbeat = setInterval(() => {
      heartbeatWorker(o.db, identity).catch((err) => o.log.warn({ err }, "worker heartbeat failed; retrying"));
      cancels.sweep().catch((err) => o.log.warn({ err }, "could not check in-flight runs for cancels; retrying"));
    }, o.heartbeatMs ?? 1000);
    this.heartbeat.unref();

    const deps: AttemptDeps = {
      db: o.db,
      dags: new DagCache(o.db),
      tasks: o.tasks,
      workerId: this.id,
      log,
      metrics: o.metrics,
      leaseMs: o.leaseMs ?? 5000,
      executing: new Set(),
      writes: new AttemptWrites(o.db, o.relaxedDb ?? o.db, this.id),
      jobs: new BatchedEnqueue(o.queues),
      unknownTaskGraceMs: o.unknownTaskGraceMs ?? 600_000,
    };
    const perQueue = Math.max(1, Math.floor(o.concurrency / o.queueNames.length));
    for (const name of o.queueNames) {
      const processJob = (job: Job<NodeJobData>, token?: string) =>
        this.inFlight.track(job.data.runId, (cancel) =>
          withAttemptStore({ db: o.db, workerId: this.id }, () => runAttempt(deps, job, cancel, token)),
        );
      const worker = new Worker<NodeJobData>(name, processJob, {
        connection: o.connection,
        prefix: o.queues.prefix,
        concurrency: perQueue,
        lockDuration: o.lockDurationMs ?? 5000,
        stalledInterval: o.stalledIntervalMs ?? 2000,
        // A stalled job is an attempt whose worker died; the fence decides what happens to it.
        maxStalledCount: 1000,
      });
      worker.on("error", (err) => o.log.warn({ err, queue: name }, "BullMQ worker error"));
      worker.on("failed", (job, err) => o.log.error({ err, jobId: job?.id }, "job processor threw; the reconciler will requeue the node"));
      this.workers.push(worker);
    }
  }

  /** Graceful: takes no new jobs, waits for in-flight attempts to finish, then leaves. */
  async stop(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.close()));
    this.workers.length = 0;
    clearInterval(this.heartbeat);
    await closeExecutors();
    await this.cancels?.stop();
    await removeWorker(this.options.db, this.id).catch(() => {});
  }
}
