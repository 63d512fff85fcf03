import type { Logger } from "pino";
import type { Registry } from "prom-client";
import {
  Admission,
  AlertEvaluator,
  alertDeliveriesMetric,
  Reconciler,
  RetentionLoop,
  ScheduleLoop,
  scheduleLagMetric,
  TriggerListener,
} from "@ax/coordinator";
import { registerSchedules } from "@ax/store";
import { createWorkerMetrics, NodeWorker, type NodeWorkerOptions } from "@ax/worker";
import type { RunningServer } from "@ax/server";
import type { LiveConfig } from "./config/live-config.js";
import { pruneHistory } from "./prune-history.js";
import type { Connections } from "./connections.js";
import type { RuntimeCode } from "./runtime-code.js";
import { failurePolicies } from "./failure-policies.js";
import type { RuntimeOptions } from "./runtime-options.js";
import { DEFAULT_RETENTION_MS } from "@ax/common";

/** What the set-up of each role of a started Runtime reads. */
export interface RoleContext {
  options: RuntimeOptions;
  code: RuntimeCode;
  connections: Connections;
  log: Logger;
  registry: Registry;
}

/**
 * The worker role, not started yet: held before it starts, a worker whose start failed is still
 * stopped. `inForce` reads the config applied now at each use.
 */
export function createWorker(
  { options, code, connections, log, registry }: RoleContext,
  inForce: Pick<NodeWorkerOptions, "clusterLimits" | "configVersion" | "catchUpConfig">,
): NodeWorker {
  const { store, queues } = connections;
  const used = code.queues();
  const unused = (options.queues ?? []).filter((queue) => !used.includes(queue));
  if (unused.length > 0) {
    // Usually a typo in --queues: such a worker starts fine and never runs anything there.
    log.warn(
      { queues: unused, used },
      `no task of this process's flows is in queue ${unused.join(", ")} (they use ${used.join(", ")}); ` +
        "this worker runs nothing there: it serves the queues its tasks are in when it starts, so a config version moving a task there takes effect when it restarts",
    );
  }
  return new NodeWorker({
    db: store.db,
    relaxedDb: store.relaxed,
    leasesDb: store.leases,
    connection: connections.redis,
    queues,
    queueNames: options.queues ?? code.queues(),
    concurrency: options.maxConcurrency ?? 10,
    clusterLimits: inForce.clusterLimits,
    configVersion: inForce.configVersion,
    catchUpConfig: inForce.catchUpConfig,
    tasks: code.taskSource(),
    log,
    redact: options.redact,
    metrics: createWorkerMetrics(registry),
    ...options.worker,
  });
}

/**
 * The coordinator role's loops. Each is set before it starts, so a Runtime whose start failed
 * half-way still stops those already running.
 */
export class CoordinatorRole {
  reconciler: Reconciler | undefined;
  schedules: ScheduleLoop | undefined;
  triggerListener: TriggerListener | undefined;
  admission: Admission | undefined;
  alerts: AlertEvaluator | undefined;
  retention: RetentionLoop | undefined;

  /** `started` turns false once the Runtime stops: a config version applied while it stops starts no evaluator. */
  constructor(
    private readonly context: RoleContext,
    private readonly started: () => boolean,
  ) {}

  async start(): Promise<void> {
    const { options, code, connections, log, registry } = this.context;
    const { store, queues } = connections;
    this.reconciler = new Reconciler(
      store.db,
      queues,
      log.child({ component: "reconciler" }),
      failurePolicies(store.db, () => code.config),
      options.reconciler,
    );
    this.reconciler.start();
    await registerSchedules(store.db, code.flowNames, code.schedules());
    this.schedules = new ScheduleLoop({
      db: store.db,
      queues,
      jobs: connections.writer.jobs,
      log: log.child({ component: "schedules" }),
      flows: code.flowNames,
      observeLag: scheduleLagMetric(registry),
    });
    await this.schedules.start();
    this.triggerListener = new TriggerListener(store, queues, log.child({ component: "trigger-listener" }));
    await this.triggerListener.start();
    this.admission = new Admission({ db: store.db, queues }, log.child({ component: "admission" }), options.admission);
    this.admission.start();
    alertDeliveriesMetric(registry);
    await this.syncAlerts();
    this.retention = new RetentionLoop(
      store,
      () => code.config.retentionMs ?? DEFAULT_RETENTION_MS,
      log.child({ component: "retention" }),
      options.retention,
    );
    this.retention.start();
  }

  /** A config version applied while running: the stored schedules are rewritten so the loops act on them. */
  async applyConfig(): Promise<void> {
    const { code, connections } = this.context;
    if (this.schedules) {
      await registerSchedules(connections.store.db, code.flowNames, code.schedules());
      await this.schedules.reload();
    }
    await this.syncAlerts();
  }

  /** Alerts are evaluated only once a group is defined: a cluster without `alerts:` pays nothing for them. */
  private async syncAlerts(): Promise<void> {
    const { options, code, connections, log, registry } = this.context;
    if (this.alerts || Object.keys(code.alertGroups).length === 0 || !this.started()) return;
    const { store, redis, queues } = connections;
    const alerts = new AlertEvaluator({
      db: store.db,
      redis,
      prefix: queues.prefix,
      log: log.child({ component: "alerts" }),
      registry,
      groups: () => code.alertGroups,
      stuckScanMs: options.alerts?.stuckScanMs,
    });
    await alerts.start();
    this.alerts = alerts;
  }
}

/** The API role; its `/api/config…` routes read and store versions through `live`. */
export async function startApi({ options, code, connections, log, registry }: RoleContext, live: LiveConfig): Promise<RunningServer> {
  // Loaded only here: the HTTP API (fastify, the console) would add about 30 MB to every worker.
  const { startServer } = await import("@ax/server");
  return startServer({
    db: connections.store.db,
    queues: connections.queues,
    registry,
    log,
    port: options.port,
    host: options.host,
    flows: code.served(),
    config: live,
    history: { prune: (request) => pruneHistory(connections.store, request) },
    auth: { insecureNoAuth: options.insecureNoAuth, metricsAuth: options.metricsAuth },
    stuckAfterMs: options.metrics?.stuckAfterMs,
  });
}
