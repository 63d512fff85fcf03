import { hostname, userInfo } from "node:os";
import type { Logger } from "pino";
import { Registry } from "prom-client";
import { z } from "zod";
import {
  Admission,
  AlertEvaluator,
  alertDeliveriesMetric,
  attachEventSource,
  checkEvictionPolicy,
  Reconciler,
  RetentionLoop,
  ScheduleLoop,
  scheduleLagMetric,
  TriggerListener,
  type AdmissionOptions,
  type ReconcilerOptions,
  type RetentionOptions,
} from "@ax/coordinator";
import {
  countApiTokens,
  insertFirstConfigVersion,
  latestConfigVersion,
  migrate,
  msUntil,
  registerFlowVersion,
  registerSchedules,
  saveCodeOptions,
  saveFlowSettings,
  within,
  type ConfigVersion,
  type Json,
  type PruneResult,
} from "@ax/store";
import { createWorkerMetrics, insideExecutorChild, NodeWorker } from "@ax/worker";
import type { RunningServer } from "@ax/server";
import { startMetricsServer } from "@ax/server/metrics";
import { Client } from "./client.js";
import { axLogger } from "./logger.js";
import { RuntimeCode } from "./runtime-code.js";
import { ConfigFollower, LiveConfig } from "./config/live-config.js";
import { parseRuntimeConfig, readConfigFile } from "./config/runtime-config.js";
import { openConnections, type ConnectionOptions, type Connections } from "./connections.js";
import type { Flow } from "./definition/flow.js";
import { durationMs, type Duration } from "./duration.js";
import { formatIssues } from "./options.js";
import { AxConfigError, AxNoTokensError, DEFAULT_RETENTION_MS, DEFAULT_STOP_TIMEOUT_MS } from "@ax/common";

export type Role = "coordinator" | "worker" | "api";

export interface RuntimeOptions extends ConnectionOptions {
  flows: Flow<any>[];
  /**
   * `runtime.yaml` overriding task and flow options by name (YAML wins over code). Stored
   * versions (`ax config apply`) win over it: the file is stored as version 1 only when no
   * version is stored yet. Every Runtime follows the newest stored version live.
   */
  config?: string | undefined;
  /**
   * Attempts at once in this process. YAML's `max_concurrency` is the cluster-wide limit, not
   * this one. @defaultValue 10
   */
  maxConcurrency?: number | undefined;
  /** How often to look for a new config version, besides the Redis message. @defaultValue 2000 */
  configPollMs?: number | undefined;
  /** @defaultValue ["coordinator", "worker", "api"] */
  roles?: Role[] | undefined;
  /** Worker groups this process serves. @defaultValue every queue its flows' tasks use */
  queues?: string[] | undefined;
  /** API port (role "api"); 0 picks a free one. @defaultValue 8080 */
  port?: number | undefined;
  host?: string | undefined;
  /** Serve /metrics on this port (workers; or an API process that keeps metrics off the API port). @defaultValue none */
  metricsPort?: number | undefined;
  /**
   * Serve the API to anyone, without tokens (`ax dev`; a network you trust). Without it an API
   * process refuses to start while no token is stored (`ax token create`). @defaultValue false
   */
  insecureNoAuth?: boolean | undefined;
  /** `/metrics` on the API port needs a token (any scope); false makes it public there. @defaultValue true */
  metricsAuth?: boolean | undefined;
  /** pino paths censored in every log line, besides the defaults (`*.password`, `*.token`, `req.headers.authorization`…, docs/security.md). */
  redact?: string[] | undefined;
  /** @defaultValue process.env.AX_LOG_LEVEL ?? "info" */
  logLevel?: string | undefined;
  logger?: Logger | undefined;
  reconciler?: ReconcilerOptions | undefined;
  /** Held runs (`maxConcurrentRuns`, backfills) are released by a loop of the coordinator role. */
  admission?: AdmissionOptions | undefined;
  /** Alert evaluation (coordinator role, when `alerts:` defines a group). */
  alerts?: { /** How often to look for runs stuck `running`. @defaultValue 30000 */ stuckScanMs?: number } | undefined;
  /** The hourly prune of history older than YAML's `retention` (default 90 days), by the coordinator role. */
  retention?: RetentionOptions | undefined;
  worker?:
    | {
        heartbeatMs?: number;
        leaseMs?: number;
        lockDurationMs?: number;
        stalledIntervalMs?: number;
        /** Rows of workers whose lease lapsed longer ago than this are deleted. @defaultValue 3600000 (1 h) */
        deadWorkerRetentionMs?: number;
        /**
         * "run" (default): a step that is not its run's last commits without waiting for the disk;
         * after a PostgreSQL crash such a step may run again. "step": every outcome waits for the
         * disk (about 2 ms more per step). See docs/performance.md.
         */
        durability?: "run" | "step";
      }
    | undefined;
}

export interface StopOptions {
  /**
   * How long in-flight attempts may take to finish; then they are aborted and handed back for
   * another attempt (on any worker, without waiting for a lease). Connections then close within
   * a short grace whether or not Redis and PostgreSQL answer. @defaultValue "30s"
   */
  timeout?: Duration | undefined;
}

/** After the stop deadline, how long the connections may take to close before they are dropped. */
const CLOSE_GRACE_MS = 500;

const rolesSchema = z.array(z.enum(["coordinator", "worker", "api"])).min(1);

/** A process of the cluster: any mix of coordinator, worker and API roles. */
export class Runtime {
  readonly registry = new Registry();
  readonly log: Logger;
  private connections: Connections | undefined;
  private worker: NodeWorker | undefined;
  private reconciler: Reconciler | undefined;
  private schedules: ScheduleLoop | undefined;
  private triggerListener: TriggerListener | undefined;
  private admission: Admission | undefined;
  private retention: RetentionLoop | undefined;
  private server: RunningServer | undefined;
  private metricsServer: { close(): Promise<void> } | undefined;
  private readonly roles: Role[];
  private readonly code: RuntimeCode;
  private alerts: AlertEvaluator | undefined;
  /** The stored config version applied now; 0 before any is stored. */
  private appliedVersion = 0;
  private live: LiveConfig | undefined;
  private follower: ConfigFollower | undefined;
  private detachEvents: (() => Promise<void>) | undefined;

  constructor(private readonly options: RuntimeOptions) {
    const roles = rolesSchema.safeParse(options.roles ?? ["coordinator", "worker", "api"]);
    if (!roles.success) throw new AxConfigError(`Runtime roles: ${formatIssues(roles.error)}`);
    this.roles = roles.data;
    const flows = options.flows ?? [];
    if (flows.length === 0) throw new AxConfigError("Runtime needs at least one flow in `flows`");
    this.log = options.logger ?? axLogger({ level: options.logLevel, redact: options.redact });
    this.code = new RuntimeCode(flows);
  }

  /** The worker's id in attempt history, once started with the worker role. */
  get workerId(): string | undefined {
    return this.worker?.id;
  }

  /** The stored config version this process applies; null while none is stored. */
  get configVersion(): number | null {
    return this.appliedVersion || null;
  }

  /** Stored configuration (apply, history, effective values), once started. */
  get liveConfig(): LiveConfig {
    if (!this.live) throw new AxConfigError("start() the Runtime before using its liveConfig");
    return this.live;
  }

  /** The cluster-wide limits of the config in force now; changes when a new version is applied. */
  clusterLimits(): { maxConcurrency: number | null; pools: Record<string, number> } {
    return this.code.clusterLimits();
  }

  /** The API's base URL, once started with the api role. */
  get url(): string | undefined {
    return this.server?.url;
  }

  /** Applies migrations, stores the flows' DAGs as versions, then starts this process's roles. */
  async start(): Promise<void> {
    if (insideExecutorChild()) {
      throw new AxConfigError(
        'a Runtime was started inside a thread/process executor: it imports the module that defined the task it runs. Define tasks with executor "thread" or "process" in a module that does not start the Runtime.',
      );
    }
    const file = this.options.config;
    const fileText = file === undefined ? undefined : readConfigFile(file);
    // A malformed file fails the start before any connection opens; its names are checked against the cluster below.
    if (file !== undefined && fileText !== undefined) parseRuntimeConfig(fileText, file);
    const connections = openConnections(this.options, this.log);
    this.connections = connections;
    const { store, queues } = connections;
    await migrate(store);
    if (this.roles.includes("api") && !this.options.insecureNoAuth && (await countApiTokens(store.db)) === 0) {
      // Before any role starts: an API open to anyone by accident is worse than a process that does not start.
      this.connections = undefined;
      await connections.close();
      throw new AxNoTokensError();
    }
    await checkEvictionPolicy(connections.redis, this.log, this.registry);
    this.live = new LiveConfig(store.db, connections.redis, queues.prefix);
    await saveCodeOptions(store.db, this.code.codeOptionRows());
    await this.adoptStartConfig(file, fileText);
    await this.registerFlows();
    this.detachEvents = attachEventSource(connections.redis, queues.prefix, this.log.child({ component: "events" }));

    if (this.roles.includes("worker")) {
      this.worker = new NodeWorker({
        db: store.db,
        relaxedDb: store.relaxed,
        leasesDb: store.leases,
        connection: connections.redis,
        queues,
        queueNames: this.options.queues ?? this.code.queues(),
        concurrency: this.options.maxConcurrency ?? 10,
        clusterLimits: () => this.clusterLimits(),
        configVersion: () => this.configVersion,
        tasks: this.code.taskSource(),
        log: this.log,
        metrics: createWorkerMetrics(this.registry),
        ...this.options.worker,
      });
      await this.worker.start();
    }
    if (this.roles.includes("coordinator")) {
      this.reconciler = new Reconciler(store.db, queues, this.log.child({ component: "reconciler" }), this.options.reconciler);
      this.reconciler.start();
      await registerSchedules(store.db, this.code.flowNames, this.code.schedules());
      this.schedules = new ScheduleLoop({
        db: store.db,
        queues,
        jobs: connections.writer.jobs,
        log: this.log.child({ component: "schedules" }),
        flows: this.code.flowNames,
        observeLag: scheduleLagMetric(this.registry),
      });
      await this.schedules.start();
      this.triggerListener = new TriggerListener(store, queues, this.log.child({ component: "trigger-listener" }));
      await this.triggerListener.start();
      this.admission = new Admission({ db: store.db, queues }, this.log.child({ component: "admission" }), this.options.admission);
      this.admission.start();
      alertDeliveriesMetric(this.registry);
      await this.syncAlerts();
      this.retention = new RetentionLoop(
        store,
        () => this.code.config.retentionMs ?? DEFAULT_RETENTION_MS,
        this.log.child({ component: "retention" }),
        this.options.retention,
      );
      this.retention.start();
    }
    if (this.roles.includes("api")) {
      // Loaded only here: the HTTP API (fastify, the console) would add about 30 MB to every worker.
      const { startServer } = await import("@ax/server");
      this.server = await startServer({
        db: store.db,
        queues,
        registry: this.registry,
        log: this.log,
        port: this.options.port,
        host: this.options.host,
        flows: this.code.served(),
        config: this.live,
        auth: { insecureNoAuth: this.options.insecureNoAuth, metricsAuth: this.options.metricsAuth },
      });
    }
    if (this.options.metricsPort !== undefined) {
      this.metricsServer = await startMetricsServer(this.registry, this.options.metricsPort, this.options.host);
    }
    this.follower = new ConfigFollower({
      db: store.db,
      redis: connections.redis,
      prefix: queues.prefix,
      log: this.log.child({ component: "config" }),
      applied: () => this.appliedVersion,
      apply: (version) => this.applyNewVersion(version),
      pollMs: this.options.configPollMs,
    });
    await this.follower.start();
  }

  /** A client sharing this runtime's connections (closing it leaves them open). */
  client(): Client {
    if (!this.connections) throw new AxConfigError("start() the Runtime before asking for its client");
    return new Client({ flows: this.code.flows }, this.connections);
  }

  /** One retention pass now (tests, tools); undefined when another process is pruning. */
  async pruneHistory(): Promise<PruneResult | undefined> {
    if (!this.retention) throw new AxConfigError("this Runtime has no coordinator role");
    return this.retention.runOnce();
  }

  /** One reconcile pass now (tests, tools); normally it runs on its interval. */
  async reconcile(): Promise<number> {
    if (!this.reconciler) throw new AxConfigError("this Runtime has no coordinator role");
    return this.reconciler.runOnce();
  }

  /**
   * Graceful, within a bound: stops taking work, lets in-flight attempts finish for `timeout`,
   * hands back those that did not, and closes every connection. Returns within about `timeout`
   * plus 2 s even while Redis or PostgreSQL is unreachable.
   */
  async stop(options: StopOptions = {}): Promise<void> {
    const parsed = durationMs.safeParse(options.timeout ?? DEFAULT_STOP_TIMEOUT_MS / 1000);
    if (!parsed.success) throw new AxConfigError(`stop({ timeout }): ${formatIssues(parsed.error)}`);
    const timeoutMs = parsed.data;
    const deadline = Date.now() + timeoutMs;
    const {
      server,
      metricsServer,
      reconciler,
      schedules,
      triggerListener,
      admission,
      retention,
      worker,
      connections,
      follower,
      detachEvents,
      alerts,
    } = this;
    this.server =
      this.metricsServer =
      this.reconciler =
      this.schedules =
      this.triggerListener =
      this.admission =
      this.retention =
        undefined;
    this.worker = this.connections = this.follower = this.detachEvents = this.alerts = undefined;
    await within(
      Promise.all([
        alerts?.stop(),
        detachEvents?.(),
        follower?.stop(),
        server?.close(),
        metricsServer?.close(),
        reconciler?.stop(),
        schedules?.stop(),
        triggerListener?.stop(),
        admission?.stop(),
        retention?.stop(),
      ]),
      msUntil(deadline),
    );
    await worker?.stop(msUntil(deadline));
    // Attempts are finished or handed back: a client still checked out now is one to cut, not wait for.
    await connections?.close(CLOSE_GRACE_MS);
  }

  /**
   * At start: the newest stored version wins over the `config` file; with none stored, the file
   * (validated against the cluster's flows and this process's) becomes version 1.
   */
  private async adoptStartConfig(file: string | undefined, fileText: string | undefined): Promise<void> {
    const db = this.connections!.store.db;
    const stored = await latestConfigVersion(db);
    if (stored) {
      this.applyVersion(stored);
      this.appliedVersion = stored.version;
      if (file !== undefined && fileText !== stored.yaml) {
        this.log.warn(
          { file, version: stored.version },
          "the config file differs from the stored config version, which wins; store the file with `ax config apply` to use it",
        );
      }
      return;
    }
    if (file === undefined || fileText === undefined) return;
    const cluster = await this.live!.knownNames();
    const parsed = parseRuntimeConfig(fileText, file, {
      tasks: [...cluster.tasks, ...this.code.taskNames],
      flows: [...cluster.flows, ...this.code.flowNames],
    });
    const author = `${process.env.USER ?? userInfo().username}@${hostname()}`;
    const first = await insertFirstConfigVersion(db, { yaml: fileText, parsed: parsed as unknown as Json, author, file });
    this.applyVersion(first);
    this.appliedVersion = first.version;
  }

  /** Parses a stored version (throwing AxConfigError, with nothing changed, if this process cannot) and applies it in memory. */
  private applyVersion(version: ConfigVersion): void {
    this.code.apply(parseRuntimeConfig(version.yaml, `${version.file} (config v${version.version})`));
  }

  /**
   * A version stored while running: task options apply to attempts that start from now on, and
   * the stored flow settings and schedules are rewritten so the coordinators act on them.
   */
  private async applyNewVersion(version: ConfigVersion): Promise<void> {
    this.applyVersion(version);
    // A failed write leaves the version unapplied as far as the poll is concerned: it is applied again.
    await this.registerFlows();
    if (this.schedules) {
      await registerSchedules(this.connections!.store.db, this.code.flowNames, this.code.schedules());
      await this.schedules.reload();
    }
    if (this.roles.includes("coordinator")) await this.syncAlerts();
    this.appliedVersion = version.version;
    this.log.info({ version: version.version, author: version.author, file: version.file }, "config version applied");
  }

  private async registerFlows(): Promise<void> {
    const db = this.connections!.store.db;
    for (const flow of this.code.flows) {
      await registerFlowVersion(db, ...this.code.versionOf(flow));
      await saveFlowSettings(db, this.code.settingsOf(flow));
    }
  }

  /** Alerts are evaluated only once a group is defined: a cluster without `alerts:` pays nothing for them. */
  private async syncAlerts(): Promise<void> {
    if (this.alerts || Object.keys(this.code.alertGroups).length === 0 || !this.connections) return;
    const { store, redis, queues } = this.connections;
    const alerts = new AlertEvaluator({
      db: store.db,
      redis,
      prefix: queues.prefix,
      log: this.log.child({ component: "alerts" }),
      registry: this.registry,
      groups: () => this.code.alertGroups,
      stuckScanMs: this.options.alerts?.stuckScanMs,
    });
    await alerts.start();
    this.alerts = alerts;
  }
}
