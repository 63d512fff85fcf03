import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { DEFAULT_DEAD_WORKER_RETENTION_MS, DEFAULT_HEARTBEAT_MS } from "@ax/common";
import { heartbeatProcess, latestConfigVersionNumber, removeDeadProcesses, removeProcess, type Db, type Store } from "@ax/store";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { RepeatedErrors } from "@ax/coordinator";
import { ConfigFollower } from "./config/live-config.js";

/** How often a process looks for long-silent processes' rows to delete. */
const PURGE_EVERY_MS = 60_000;

export interface ProcessReportOptions {
  /** `Store.leases`: a main pool busy with long transactions must not delay the report. */
  db: Db;
  /** The worker's id when the process has the worker role, so its two rows tell one process. */
  id?: string | undefined;
  roles: string[];
  /** The flows its code defines: one a live process defines cannot be retired. */
  flows: string[];
  configVersion: () => number | null;
  log: Logger;
  intervalMs?: number | undefined;
}

/**
 * Reports this process and the config version it applies, every second, in the `processes`
 * table, so `ax config show --cluster` lists coordinators and API processes as well as workers
 * and shows a straggler on an old version. The row goes at stop; one left by a killed process is
 * deleted by the others an hour after it fell silent.
 */
export class ProcessReport {
  readonly id: string;
  private timer: NodeJS.Timeout | undefined;
  private reporting = false;
  private lastPurge = 0;

  private readonly errors: RepeatedErrors;

  constructor(private readonly o: ProcessReportOptions) {
    this.id = o.id ?? `${hostname()}-${process.pid}-${randomBytes(3).toString("hex")}`;
    this.errors = new RepeatedErrors(o.log);
  }

  async start(): Promise<void> {
    await this.report();
    this.timer = setInterval(() => {
      // Every process reports each second, so its report is what says when PostgreSQL answers again.
      this.report().then(
        () => this.errors.recovered("PostgreSQL answers again: this process's report went through"),
        (err) => this.errors.warn(err, {}, "could not report this process in PostgreSQL; retrying"),
      );
    }, this.o.intervalMs ?? DEFAULT_HEARTBEAT_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await removeProcess(this.o.db, this.id);
  }

  private async report(): Promise<void> {
    // A report still waiting is not doubled: a slow database gets one statement, not a queue of them.
    if (this.reporting) return;
    this.reporting = true;
    try {
      await heartbeatProcess(this.o.db, {
        id: this.id,
        hostname: hostname(),
        pid: process.pid,
        roles: this.o.roles,
        flows: this.o.flows,
        configVersion: this.o.configVersion(),
      });
    } finally {
      this.reporting = false;
    }
    if (Date.now() - this.lastPurge >= PURGE_EVERY_MS) {
      this.lastPurge = Date.now();
      const removed = await removeDeadProcesses(this.o.db, DEFAULT_DEAD_WORKER_RETENTION_MS);
      if (removed > 0) this.o.log.info({ removed }, "deleted the rows of processes silent for over an hour");
    }
  }
}

export interface StandaloneApiReportOptions {
  store: Store;
  redis: Redis;
  prefix: string;
  log: Logger;
}

/**
 * `ax server` without an entry is no Runtime, yet it is an API process of the cluster: this lists
 * it in `processes` (roles `api`) with the config version it serves, the newest stored one, which
 * it follows as a Runtime does. Stop it before closing the connections.
 */
export async function reportStandaloneApi(o: StandaloneApiReportOptions): Promise<{ stop(): Promise<void> }> {
  let served = await latestConfigVersionNumber(o.store.db);
  const follower = new ConfigFollower({
    db: o.store.db,
    redis: o.redis,
    prefix: o.prefix,
    log: o.log,
    applied: () => served,
    apply: async (version) => {
      served = version.version;
    },
  });
  const report = new ProcessReport({ db: o.store.leases, roles: ["api"], flows: [], configVersion: () => served || null, log: o.log });
  await follower.start();
  await report.start();
  return {
    async stop() {
      await follower.stop();
      await report.stop();
    },
  };
}
