import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { Job } from "bullmq";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import {
  DEFAULT_DEAD_WORKER_RETENTION_MS,
  DEFAULT_HEARTBEAT_MS,
  DEFAULT_LEASE_MS,
  DEFAULT_LOCK_DURATION_MS,
  DEFAULT_STALLED_INTERVAL_MS,
  DEFAULT_STOP_TIMEOUT_MS,
} from "@ax/common";
import { msUntil, removeWorker, within, type Db, type ReadyNode } from "@ax/store";
import {
  BatchedEnqueue,
  cancelRun,
  LimitGate,
  RepeatedErrors,
  taskQueueName,
  Waitlist,
  type NodeJobData,
  type QueueRegistry,
} from "@ax/coordinator";
import { CancelListener, InFlightAttempts } from "./cancel-listener.js";
import { AttemptWrites, DEFAULT_DURABILITY, type Durability } from "./attempt-writes.js";
import { DagCache } from "./dag-cache.js";
import { ForeignJobs } from "./foreign-jobs.js";
import { Dispatcher, type ServedQueue } from "./dispatch/dispatcher.js";
import { KeyedAdmission, PARKED_SWEEP_MS, promoteParked } from "./dispatch/keyed-admission.js";
import { LimitChanges } from "./dispatch/limit-changes.js";
import { isLimited, limitSpecOf, NO_CLUSTER_LIMITS, type ClusterLimits } from "./dispatch/limit-spec.js";
import { closeExecutors } from "./executors/index.js";
import { WorkerLease } from "./lease.js";
import type { WorkerMetrics } from "./metrics.js";
import type { AttemptDeps, AttemptJob } from "./attempt-deps.js";
import { runAttempt } from "./run-attempt.js";
import { LOST_OUTCOME_MIN_AGE_MS, requeueLostOutcomes } from "./lost-outcomes.js";
import { handBackInFlight } from "./shutdown.js";
import { TaskLogWriter } from "./task-logs.js";
import type { TaskSource } from "./task-definition.js";

export interface NodeWorkerOptions {
  db: Db;
  /** Connections whose commits do not wait for the disk (`Store.relaxed`), for the attempt fence. @defaultValue db */
  relaxedDb?: Db | undefined;
  /** A pool of its own for the lease (`Store.leases`), so a busy main pool cannot stall heartbeats. @defaultValue db */
  leasesDb?: Db | undefined;
  connection: Redis;
  queues: QueueRegistry;
  /** Worker groups this process serves: it fetches from the queue of each task it defines in them. @defaultValue ["default"] */
  queueNames: string[];
  /** Attempts at once in this process, across all its queues. @defaultValue 10 */
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
  /** Rows of workers whose lease lapsed longer ago than this are deleted. @defaultValue 3600000 (1 h) */
  deadWorkerRetentionMs?: number | undefined;
  /** The cluster-wide limits of the config in force now (`max_concurrency`, `pools`); read it at each use, it changes live. */
  clusterLimits?: (() => ClusterLimits) | undefined;
  /** The config version this process applies, reported with each lease renewal. */
  configVersion?: (() => number | null) | undefined;
  /**
   * Applies the newest stored config version now, if this process can. With it, a limit is never
   * decided by this process's older version of it while another process applies a newer one.
   */
  catchUpConfig?: (() => Promise<void>) | undefined;
  /**
   * "run": a step whose run goes on after it commits without waiting for the disk; a run's last
   * step, failures, retries and `ax.once` results always wait. "step": every outcome waits.
   * @defaultValue "run"
   */
  durability?: Durability | undefined;
  /** pino paths censored besides the defaults (Runtime option `redact`), in stored task log lines as on stdout. */
  redact?: readonly string[] | undefined;
}

/** Besides after a PostgreSQL restart, attempts recorded as running here but not executing are looked for this often. */
const LOST_OUTCOME_SWEEP_MS = 15_000;

/** After the stop deadline, how long closing connections may take before they are just dropped. */
const CLOSE_GRACE_MS = 1000;
/** How long stopping waits for the fetches under way to end. */
const FETCH_STOP_MS = 2000;

/** The worker role: fetches from its task queues in turn, executing attempts and advancing the DAG. */
export class NodeWorker {
  readonly id = `${hostname()}-${process.pid}-${randomBytes(3).toString("hex")}`;
  private dispatcher: Dispatcher | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private sweeper: NodeJS.Timeout | undefined;
  private readonly inFlight = new InFlightAttempts();
  private lookAtLimits: ((version: number) => void) | undefined;
  private cancels: CancelListener | undefined;
  private taskLogs: TaskLogWriter | undefined;

  constructor(private readonly options: NodeWorkerOptions) {}

  async start(): Promise<void> {
    const o = this.options;
    const served: ServedQueue[] = o.tasks
      .names()
      .map((task) => ({ task, group: o.tasks.get(task)!.options.queue }))
      .filter((t) => o.queueNames.includes(t.group))
      .map((t) => ({ task: t.task, name: taskQueueName(t.group, t.task) }));
    const identity = {
      id: this.id,
      hostname: hostname(),
      pid: process.pid,
      queues: served.map((q) => q.name),
      concurrency: o.concurrency,
      prefix: o.queues.prefix,
      configVersion: o.configVersion,
    };
    const log = o.log.child({ worker: this.id });
    const clusterLimits = o.clusterLimits ?? (() => NO_CLUSTER_LIMITS);
    const servedNames = new Set(served.map((q) => q.name));
    // A limited task's next attempt must take its permit from the gate, which only a fetch does.
    const continuesHere = (node: ReadyNode): boolean => {
      const options = o.tasks.get(node.task)?.options;
      // A limit per key (concurrency or rate) is counted by the key's admission, which only a fetch passes.
      if (!options || options.concurrencyKey || options.rateLimitKey || !this.dispatcher) return false;
      if (!servedNames.has(taskQueueName(node.queue, node.task))) return false;
      const spec = limitSpecOf(options, clusterLimits());
      return !("reason" in spec) && !isLimited(spec);
    };
    const lease = new WorkerLease(o.leasesDb ?? o.db, identity, o.deadWorkerRetentionMs ?? DEFAULT_DEAD_WORKER_RETENTION_MS, log);
    await lease.renew();
    const cancels = new CancelListener(o.connection, o.queues.prefix, o.db, this.inFlight, log, this.id);
    this.cancels = cancels;
    await cancels.start();
    const executing = new Set<string>();
    let nextSweep = Date.now() + LOST_OUTCOME_SWEEP_MS;
    const errors = new RepeatedErrors(log);
    this.heartbeat = setInterval(() => {
      lease
        .renew()
        .then(async (restarted) => {
          // Once the attempts running at the crash are old enough to be told from continuations.
          if (restarted) nextSweep = Math.min(nextSweep, Date.now() + LOST_OUTCOME_MIN_AGE_MS);
          if (Date.now() < nextSweep) return;
          await requeueLostOutcomes({ db: o.db, queues: o.queues, workerId: this.id, executing, log });
          nextSweep = Date.now() + LOST_OUTCOME_SWEEP_MS;
        })
        .catch((err) => errors.warn(err, {}, "worker heartbeat failed; retrying"));
      cancels.sweep().catch((err) => errors.warn(err, {}, "could not check in-flight runs for cancels; retrying"));
    }, o.heartbeatMs ?? DEFAULT_HEARTBEAT_MS);
    this.heartbeat.unref();

    // Lines lost in a database crash are still on stdout: their commits need not wait for the disk.
    const taskLogs = new TaskLogWriter(o.relaxedDb ?? o.db, log, o.redact);
    this.taskLogs = taskLogs;
    const deps: AttemptDeps = {
      db: o.db,
      dags: new DagCache(o.db),
      tasks: o.tasks,
      workerId: this.id,
      log,
      metrics: o.metrics,
      leaseMs: o.leaseMs ?? DEFAULT_LEASE_MS,
      executing,
      writes: new AttemptWrites(o.db, o.relaxedDb ?? o.db, this.id, o.durability ?? DEFAULT_DURABILITY),
      jobs: new BatchedEnqueue(o.queues, log),
      events: o.queues.events,
      taskLogs,
      onceStore: { db: o.db, workerId: this.id },
      foreignJobs: new ForeignJobs(log, o.queues.prefix),
      continuesHere,
    };
    const { configVersion, catchUpConfig } = o;
    const gate = new LimitGate(o.connection, o.queues.prefix, {
      leaseMs: o.leaseMs ?? DEFAULT_LEASE_MS,
      log,
      config: configVersion && catchUpConfig ? { version: () => configVersion() ?? 0, catchUp: catchUpConfig } : undefined,
    });
    const keyed = new KeyedAdmission({
      db: o.db,
      redis: o.connection,
      prefix: o.queues.prefix,
      workerId: this.id,
      gate,
      waitlist: new Waitlist(o.connection, o.queues.prefix),
      dags: deps.dags,
      log,
      cancelRun: (runId, reason) => cancelRun({ db: o.db, queues: o.queues }, runId, reason),
      promote: (waiter) => promoteParked(o.queues, waiter, log),
      optionsOf: (task) => o.tasks.get(task)?.options,
    });
    const servedOptions = () => served.flatMap((q) => o.tasks.get(q.task)?.options ?? []);
    const limitChanges = new LimitChanges();
    limitChanges.look(servedOptions(), clusterLimits());
    const sweep = () =>
      keyed.sweep(servedOptions()).catch((err) => errors.warn(err, {}, "could not look for parked jobs whose key came free; retrying"));
    this.lookAtLimits = (version) => {
      const { changed, rateKeyLoosened } = limitChanges.look(servedOptions(), clusterLimits());
      if (changed.length > 0) this.dispatcher?.limitsChanged(changed);
      // Lines of keys whose limit was raised or removed go now, not at the next sweep.
      void sweep();
      for (const task of rateKeyLoosened) {
        keyed
          .promoteRateDelayed(task, version)
          .catch((err) =>
            log.warn(
              { err, task: task.name },
              "could not put back jobs delayed by a rate limit per key that was raised; they start when their delay ends",
            ),
          );
      }
    };
    // Every worker sweeps, keyed tasks or not: a limit removed by live configuration leaves its waiters parked.
    this.sweeper = setInterval(() => {
      // While Redis is away the sweep would only queue up behind the reconnect; the next one after it does the work.
      if (o.connection.status !== "ready") return;
      void sweep();
    }, PARKED_SWEEP_MS);
    this.sweeper.unref();
    this.dispatcher = new Dispatcher({
      connection: o.connection,
      prefix: o.queues.prefix,
      workerId: this.id,
      queues: served,
      concurrency: o.concurrency,
      lockDurationMs: o.lockDurationMs ?? DEFAULT_LOCK_DURATION_MS,
      stalledIntervalMs: o.stalledIntervalMs ?? DEFAULT_STALLED_INTERVAL_MS,
      gate,
      limitsOf: (task) => limitSpecOf(o.tasks.get(task)!.options, clusterLimits()),
      process: (job: Job<NodeJobData>) => {
        const { runId, nodeKey, attempt, flowVersionId } = job.data;
        return this.runWithContinuations(deps, { runId, nodeKey, attempt, flowVersionId, priority: job.opts.priority });
      },
      admit: (job, token, queue) => keyed.admit(job, token, queue, o.tasks.get(job.name)!.options),
      hasKeyLimit: (task) => Boolean(o.tasks.get(task)?.options.concurrencyKey),
      adoptKey: (job) => keyed.adopt(job, o.tasks.get(job.name)!.options),
      log,
    });
    await this.dispatcher.start();
  }

  /**
   * A config version was applied: queues that waited on a changed limit are fetched again at once,
   * and jobs delayed by a rate limit per key that now lets more through are put back in their queues.
   */
  configApplied(version: number): void {
    this.lookAtLimits?.(version);
  }

  /** The job's attempt, then each node it made ready that continues here, in the job's worker slot. */
  private async runWithContinuations(deps: AttemptDeps, first: AttemptJob): Promise<void> {
    let next: AttemptJob | undefined = first;
    while (next) {
      const job: AttemptJob = next;
      next = await this.inFlight.track(job, (cancel) => runAttempt(deps, job, cancel));
    }
  }

  /**
   * Takes no new jobs and gives in-flight attempts `timeoutMs` to finish; those still running then
   * are handed back for another attempt and their signals aborted. Closing takes at most a short
   * grace after that, whether or not Redis and PostgreSQL answer. `givenMs`: the stop timeout as
   * the caller set it, which the handed-back attempts' error names (`timeoutMs` may be what is left
   * of it after other parts stopped).
   */
  async stop(timeoutMs = DEFAULT_STOP_TIMEOUT_MS, givenMs = timeoutMs): Promise<void> {
    const o = this.options;
    const deadline = Date.now() + timeoutMs;
    const dispatcher = this.dispatcher;
    this.dispatcher = undefined;
    // A fetch under way when Redis is gone never answers: stopping waits for it only briefly (a
    // fetch takes milliseconds), so that a worker with nothing in flight exits during an outage
    // instead of at its deadline. A job such a fetch might still take comes back as stalled.
    if (dispatcher) await within(dispatcher.stopFetching(), Math.min(msUntil(deadline), FETCH_STOP_MS));
    const finished = await within(this.inFlight.idle(), msUntil(deadline));
    if (!finished.done) {
      await handBackInFlight({
        db: o.db,
        queues: o.queues,
        workerId: this.id,
        inFlight: this.inFlight,
        log: o.log,
        timeoutMs: givenMs,
        deadline: deadline + CLOSE_GRACE_MS,
      });
    }
    const closeBy = Math.min(Date.now(), deadline) + CLOSE_GRACE_MS;
    clearInterval(this.heartbeat);
    clearInterval(this.sweeper);
    this.cancels?.stop();
    const taskLogs = this.taskLogs?.close() ?? Promise.resolve();
    // Closing waits for the fetched jobs to settle: finished here, or handed back at the deadline.
    const closing = dispatcher ? dispatcher.settled().then(() => dispatcher.close()) : Promise.resolve();
    const [closed] = await Promise.all([
      within(closing, msUntil(closeBy)),
      within(closeExecutors(), msUntil(closeBy)),
      within(removeWorker(o.leasesDb ?? o.db, this.id), msUntil(closeBy)),
      within(taskLogs, msUntil(closeBy)),
    ]);
    // A job whose processor never settled (its writes retrying against a database that is gone),
    // or Redis unreachable: drop BullMQ's connections rather than wait.
    if (!closed.done && dispatcher) await within(dispatcher.disconnect(), 200);
  }
}
