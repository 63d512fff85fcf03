import type { Logger } from "pino";
import { Registry } from "prom-client";
import { attachEventSource, checkEvictionPolicy, checkRedisVersion, markConfigVersion } from "@ax/coordinator";
import {
  advertiseApi,
  countApiTokens,
  insertConfigVersion,
  insertFirstConfigVersion,
  latestConfigVersion,
  migrate,
  msUntil,
  NEW_SCHEMA,
  registerFlowVersion,
  saveCodeOptions,
  saveFlowSettings,
  within,
  type ConfigVersion,
  type Json,
  type PruneResult,
} from "@ax/store";
import { insideExecutorChild, type NodeWorker } from "@ax/worker";
import type { RunningServer } from "@ax/server";
import { startMetricsServer } from "@ax/server/metrics";
import { Client } from "./client.js";
import { axLogger } from "./logger.js";
import { RuntimeCode } from "./runtime-code.js";
import { checkOptions } from "./option-checks.js";
import { ROLES, runtimeOptionsSchema, type Role, type RuntimeOptions, type StopOptions } from "./runtime-options.js";
import { CoordinatorRole, createWorker, startApi, type RoleContext } from "./runtime-roles.js";
import { ConfigFollower, LiveConfig } from "./config/live-config.js";
import { ProcessReport } from "./process-report.js";
import { parseRuntimeConfig, readConfigFile } from "./config/runtime-config.js";
import { openConnections, type Connections } from "./connections.js";
import { durationMs } from "./duration.js";
import { formatIssues } from "./option-checks.js";
import { stopOnSignals } from "./signal-stop.js";
import {
  API_LISTENER,
  assertPortFree,
  AxConfigError,
  AxNoTokensError,
  DEFAULT_API_HOST,
  DEFAULT_API_PORT,
  DEFAULT_METRICS_HOST,
  DEFAULT_STOP_TIMEOUT_MS,
  localConfigAuthor,
  METRICS_LISTENER,
} from "@ax/common";

export type { Role, RuntimeOptions, StopOptions } from "./runtime-options.js";

/** A deploy stops processes with SIGTERM, a developer with Ctrl-C. */
const DEFAULT_STOP_SIGNALS: NodeJS.Signals[] = ["SIGTERM", "SIGINT"];

/** After the stop deadline, how long the connections may take to close before they are dropped. */
const CLOSE_GRACE_MS = 500;

/** A process of the cluster: any mix of coordinator, worker and API roles. */
export class Runtime {
  readonly registry = new Registry();
  readonly log: Logger;
  private connections: Connections | undefined;
  private worker: NodeWorker | undefined;
  private coordinator: CoordinatorRole | undefined;
  private server: RunningServer | undefined;
  private metricsServer: { close(): Promise<void> } | undefined;
  private readonly roles: Role[];
  private readonly code: RuntimeCode;
  /** The stored config version applied now; 0 before any is stored. */
  private appliedVersion = 0;
  private live: LiveConfig | undefined;
  private follower: ConfigFollower | undefined;
  private report: ProcessReport | undefined;
  private detachEvents: (() => Promise<void>) | undefined;
  private unsignal: (() => void) | undefined;
  private stopping: Promise<void> | undefined;
  private started = false;

  constructor(private readonly options: RuntimeOptions) {
    checkOptions(runtimeOptionsSchema, options, (problems) => new AxConfigError(`Runtime options: ${problems}`));
    this.roles = options.roles ?? [...ROLES];
    this.log = options.logger ?? axLogger({ level: options.logLevel, redact: options.redact });
    this.code = new RuntimeCode(options.flows);
  }

  /** The worker's id in attempt history, once started with the worker role. */
  get workerId(): string | undefined {
    return this.worker?.id;
  }

  /** This process's id in `ax config show --cluster` (its worker's id with the worker role), once started. */
  get processId(): string | undefined {
    return this.report?.id;
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
    // Its metrics registry, connections and roles belong to one start; a second would replace them under the first.
    if (this.started) {
      throw new AxConfigError(
        "this Runtime was already started (a Runtime starts once, and cannot start again after stop()); create a new Runtime to start again",
      );
    }
    this.started = true;
    const file = this.options.config;
    const fileText = file === undefined ? undefined : readConfigFile(file);
    // A malformed file fails the start before any connection opens; its names are checked against the cluster below.
    if (file !== undefined && fileText !== undefined) parseRuntimeConfig(fileText, file);
    const connections = openConnections(this.options, this.log);
    this.connections = connections;
    try {
      const live = await this.prepare(connections, file, fileText);
      await this.startRoles(connections, live);
    } catch (error) {
      // A failed start (PostgreSQL unreachable, the API's port taken) releases everything it
      // opened: a role must not go on working unseen, nor a connection keep the process alive.
      await this.stop({ timeout: 1 }).catch(() => undefined);
      throw error;
    }
    const signals = this.options.stopOnSignals ?? DEFAULT_STOP_SIGNALS;
    if (signals !== false) {
      this.unsignal = stopOnSignals({ log: this.log, stop: () => this.stop({ timeout: this.options.stopTimeout }) }, signals);
    }
  }

  /** What every role needs before it starts: the schema, the stored options and config, the flows. */
  private async prepare(connections: Connections, file: string | undefined, fileText: string | undefined): Promise<LiveConfig> {
    const { store, queues } = connections;
    await this.assertPortsFree();
    const { created } = await migrate(store);
    if (created) this.log.warn({ schema: store.schema }, NEW_SCHEMA);
    if (this.roles.includes("api") && !this.options.insecureNoAuth && (await countApiTokens(store.db)) === 0) {
      // Before any role starts: an API open to anyone by accident is worse than a process that does not start.
      throw new AxNoTokensError();
    }
    await checkRedisVersion(connections.redis, this.log);
    await checkEvictionPolicy(connections.redis, this.log, this.registry);
    const live = new LiveConfig(store.db, connections.redis, queues.prefix);
    this.live = live;
    await saveCodeOptions(store.db, this.code.codeOptionRows());
    await this.adoptStartConfig(file, fileText);
    await this.registerFlows();
    this.detachEvents = attachEventSource(connections.redis, queues.prefix, this.log.child({ component: "events" }));
    return live;
  }

  /** A taken port fails the start here, before it stores a config file or flows, not after. */
  private async assertPortsFree(): Promise<void> {
    const { port, host, metricsPort } = this.options;
    if (this.roles.includes("api")) await assertPortFree(port ?? DEFAULT_API_PORT, host ?? DEFAULT_API_HOST, API_LISTENER.what);
    if (metricsPort !== undefined) {
      await assertPortFree(metricsPort, host ?? DEFAULT_METRICS_HOST, METRICS_LISTENER.what, METRICS_LISTENER.choice);
    }
  }

  private async startRoles(connections: Connections, live: LiveConfig): Promise<void> {
    const { store, queues } = connections;
    const context: RoleContext = { options: this.options, code: this.code, connections, log: this.log, registry: this.registry };
    // Ports first: one that is taken fails the start before any role has taken a job or a tick.
    if (this.roles.includes("api")) this.server = await startApi(context, live);
    // The ax CLI reaches an embedded history this process holds through its API, as it does an ax dev's.
    if (this.server && !this.options.storage) advertiseApi(this.server.url);
    if (this.options.metricsPort !== undefined) {
      this.metricsServer = await startMetricsServer(this.registry, this.options.metricsPort, this.options.host, {
        db: store.db,
        redis: connections.redis,
      });
    }
    if (this.roles.includes("worker")) {
      this.worker = createWorker(context, {
        clusterLimits: () => this.clusterLimits(),
        configVersion: () => this.configVersion,
        // Nothing catches up before the follower starts (after the worker): the gate then goes by the version applied at start.
        catchUpConfig: async () => this.follower?.catchUp(),
      });
      await this.worker.start();
    }
    if (this.roles.includes("coordinator")) {
      this.coordinator = new CoordinatorRole(context, () => this.connections !== undefined);
      await this.coordinator.start();
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
    this.report = new ProcessReport({
      db: store.leases,
      id: this.worker?.id,
      roles: this.roles,
      flows: this.code.flowNames,
      configVersion: () => this.configVersion,
      log: this.log,
    });
    await this.report.start();
  }

  /** A client sharing this runtime's connections (closing it leaves them open). */
  client(): Client {
    if (!this.connections) {
      throw new AxConfigError(
        this.started
          ? "this Runtime was stopped (or its start failed), and its connections with it; use a Client of your own (new Client({ storage, redis })), or a new Runtime"
          : "start() the Runtime before asking for its client",
      );
    }
    return new Client({ flows: this.code.flows }, this.connections);
  }

  /** One retention pass now (tests, tools); undefined when another process is pruning. */
  async pruneHistory(): Promise<PruneResult | undefined> {
    const retention = this.coordinator?.retention;
    if (!retention) throw new AxConfigError("this Runtime has no coordinator role");
    return retention.runOnce();
  }

  /** One reconcile pass now (tests, tools); normally it runs on its interval. */
  async reconcile(): Promise<number> {
    const reconciler = this.coordinator?.reconciler;
    if (!reconciler) throw new AxConfigError("this Runtime has no coordinator role");
    return reconciler.runOnce();
  }

  /**
   * Graceful, within a bound: stops taking work, lets in-flight attempts finish for `timeout`,
   * hands back those that did not, and closes every connection. Returns within about `timeout`
   * plus 2 s even while Redis or PostgreSQL is unreachable. A call while a stop is under way
   * (a signal's and the service's own) waits for that stop, on its timeout.
   */
  async stop(options: StopOptions = {}): Promise<void> {
    const parsed = durationMs.safeParse(options.timeout ?? DEFAULT_STOP_TIMEOUT_MS / 1000);
    if (!parsed.success) throw new AxConfigError(`stop({ timeout }): ${formatIssues(parsed.error)}`);
    this.stopping ??= this.stopWithin(parsed.data).finally(() => {
      this.stopping = undefined;
    });
    return this.stopping;
  }

  private async stopWithin(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    this.unsignal?.();
    this.unsignal = undefined;
    const { server, metricsServer, coordinator, worker, connections, follower, report, detachEvents } = this;
    if (server && !this.options.storage) advertiseApi(undefined);
    this.server =
      this.metricsServer =
      this.coordinator =
      this.worker =
      this.connections =
      this.follower =
      this.report =
      this.detachEvents =
        undefined;
    await within(
      Promise.all([
        report?.stop(),
        coordinator?.alerts?.stop(),
        detachEvents?.(),
        follower?.stop(),
        server?.close(),
        metricsServer?.close(),
        coordinator?.reconciler?.stop(),
        coordinator?.schedules?.stop(),
        coordinator?.triggerListener?.stop(),
        coordinator?.admission?.stop(),
        coordinator?.retention?.stop(),
      ]),
      msUntil(deadline),
    );
    await worker?.stop(msUntil(deadline), timeoutMs);
    // Attempts are finished or handed back: a client still checked out now is one to cut, not wait for.
    await connections?.close(CLOSE_GRACE_MS);
  }

  /**
   * At start: the newest stored version wins over the `config` file (unless `configFileWins`:
   * then a file that differs is stored as a new version); with none stored, the file (validated
   * against the cluster's flows and this process's) becomes version 1.
   */
  private async adoptStartConfig(file: string | undefined, fileText: string | undefined): Promise<void> {
    const db = this.connections!.store.db;
    const stored = await latestConfigVersion(db);
    if (stored && (file === undefined || fileText === stored.yaml || !this.options.configFileWins)) {
      await this.markVersion(stored.version);
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
    // The cluster's taskPools include this process's: its code options were saved before this.
    const parsed = parseRuntimeConfig(fileText, file, {
      ...cluster,
      // Each name once: a task named twice would have each of its problems reported twice.
      tasks: [...new Set([...cluster.tasks, ...this.code.taskNames])],
      flows: [...new Set([...cluster.flows, ...this.code.flowNames])],
    });
    const version = {
      yaml: fileText,
      parsed: parsed as unknown as Json,
      author: localConfigAuthor(),
      file,
    };
    const adopted = stored ? await insertConfigVersion(db, version) : await insertFirstConfigVersion(db, version);
    await this.markVersion(adopted.version);
    this.applyVersion(adopted);
    this.appliedVersion = adopted.version;
    if (stored) {
      this.log.info({ file, version: adopted.version }, `config file stored as version ${adopted.version} (configFileWins)`);
      await this.live!.announce(adopted.version);
    }
  }

  /** Parses a stored version (throwing AxConfigError, with nothing changed, if this process cannot) and applies it in memory. */
  private applyVersion(version: ConfigVersion): void {
    const notes = this.code.apply(parseRuntimeConfig(version.yaml, `${version.file} (config v${version.version})`));
    for (const note of notes) this.log.warn({ version: version.version }, note);
  }

  /**
   * A version stored while running: task options apply to attempts that start from now on, and
   * the stored flow settings and schedules are rewritten so the coordinators act on them.
   */
  private async applyNewVersion(version: ConfigVersion): Promise<void> {
    // Stopping: the connections are gone, and a start reads the newest version anyway.
    if (!this.connections) return;
    await this.markVersion(version.version);
    if (!this.connections) return;
    this.applyVersion(version);
    this.worker?.configApplied(version.version);
    // A failed write leaves the version unapplied as far as the poll is concerned: it is applied again.
    await this.registerFlows();
    await this.coordinator?.applyConfig();
    this.appliedVersion = version.version;
    this.log.info({ version: version.version, author: version.author, file: version.file }, "config version applied");
  }

  /** Before this process acts on `version`, the limit gate stops processes still on an older one deciding (see config-version.ts). */
  private async markVersion(version: number): Promise<void> {
    const { redis, queues } = this.connections!;
    await markConfigVersion(redis, queues.prefix, version);
  }

  private async registerFlows(): Promise<void> {
    const db = this.connections!.store.db;
    for (const flow of this.code.flows) {
      await registerFlowVersion(db, ...this.code.versionOf(flow));
      const { retiredAt } = await saveFlowSettings(db, this.code.settingsOf(flow));
      if (retiredAt)
        this.log.warn({ flow: flow.name, retiredAt }, "this flow had been retired; this process's code defines it, so it is in use again");
    }
  }
}
