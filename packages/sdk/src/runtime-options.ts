import type { Logger } from "pino";
import { z } from "zod";
import { LOG_LEVELS, QUEUE_NAME, QUEUE_NAME_RULE } from "@ax/common";
import type { AdmissionOptions, ReconcilerOptions, RetentionOptions } from "@ax/coordinator";
import type { ConnectionOptions } from "./connections.js";
import type { Flow } from "./definition/flow.js";
import { durationMs, type Duration } from "./duration.js";
import { connectionOptions, flowList, milliseconds, pinoLogger, shown, strictOptions, wholeNumber } from "./option-checks.js";

export const ROLES = ["coordinator", "worker", "api"] as const;
export type Role = (typeof ROLES)[number];

export interface RuntimeOptions extends ConnectionOptions {
  flows: Flow<any>[];
  /**
   * `runtime.yaml` overriding task and flow options by name (YAML wins over code). Stored
   * versions (`ax config apply`) win over it: the file is stored as version 1 only when no
   * version is stored yet. Every Runtime follows the newest stored version live.
   */
  config?: string | undefined;
  /**
   * At start, store a `config` file that differs from the newest stored version as a new
   * version, so the file wins (`ax dev`: the file being edited is the one in force).
   * @defaultValue false
   */
  configFileWins?: boolean | undefined;
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
  /**
   * Once started, `stop()` on these signals (a deploy's SIGTERM), then let the signal end the
   * process as it would have, unless the service listens for it too. `false` when the service
   * handles its signals itself and calls `stop()`. @defaultValue ["SIGTERM", "SIGINT"]
   */
  stopOnSignals?: false | (typeof STOP_SIGNALS)[number][] | undefined;
  /**
   * How long a stop on one of `stopOnSignals` lets in-flight attempts finish before handing them
   * back (`stop({ timeout })`). Keep it below the platform's grace period (Kubernetes'
   * `terminationGracePeriodSeconds`, 30 s by default), or SIGKILL ends the stop. @defaultValue "30s"
   */
  stopTimeout?: Duration | undefined;
  /** The cluster gauges the API role serves on `/metrics`. */
  metrics?:
    | { /** A run `running` longer than this counts in `ax_runs_stuck`. @defaultValue 3600000 (1 h) */ stuckAfterMs?: number }
    | undefined;
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

/** Signals a Runtime may stop on by itself (`stopOnSignals`). */
export const STOP_SIGNALS = ["SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT"] as const;

const port = wholeNumber(0, 65535);
const flag = z.boolean({ error: (issue) => `must be true or false, got ${shown(issue.input)}` });
const names = (what: string) =>
  z.array(z.string({ error: `must be a ${what}` }).min(1, { error: `must be a ${what}, not empty` }), {
    error: (issue) => `must be an array of ${what}s, got ${shown(issue.input)}`,
  });
const section = <S extends z.ZodRawShape>(at: string, shape: S) => strictOptions(shape, `${at}.`).optional();

/**
 * Every Runtime option, checked before anything starts: a value the roles cannot use (a
 * `maxConcurrency` of 0 takes no job, ever) is refused with AxConfigError rather than left to
 * make a process that silently runs nothing.
 */
export const runtimeOptionsSchema = strictOptions({
  ...connectionOptions,
  flows: flowList.min(1, { error: "needs at least one flow made by ax.flow(…)" }),
  config: z.string({ error: "must be the path of a runtime.yaml" }).min(1, { error: "must be the path of a runtime.yaml" }).optional(),
  configFileWins: flag.optional(),
  maxConcurrency: wholeNumber(1).optional(),
  configPollMs: milliseconds.optional(),
  roles: z
    .array(z.enum(ROLES, { error: (issue) => `must be one of ${ROLES.join(", ")}, got ${shown(issue.input)}` }), {
      error: (issue) => `must be an array of roles (${ROLES.join(", ")}), got ${shown(issue.input)}`,
    })
    .min(1, { error: `needs at least one of ${ROLES.join(", ")}` })
    .optional(),
  queues: z
    .array(
      z.string({ error: "must be a queue name" }).regex(QUEUE_NAME, { error: (issue) => `${QUEUE_NAME_RULE}, got ${shown(issue.input)}` }),
      {
        error: (issue) => `must be an array of queue names, got ${shown(issue.input)}`,
      },
    )
    .min(1, { error: "needs at least one queue name (leave it unset to serve every queue)" })
    .optional(),
  port: port.optional(),
  host: z.string({ error: "must be a host name or address" }).min(1, { error: "must be a host name or address" }).optional(),
  metricsPort: port.optional(),
  insecureNoAuth: flag.optional(),
  stopOnSignals: z
    .union([z.literal(false), z.array(z.enum(STOP_SIGNALS)).min(1)], {
      error: `must be false or a list of signals (${STOP_SIGNALS.join(", ")})`,
    })
    .optional(),
  metricsAuth: flag.optional(),
  stopTimeout: durationMs.optional(),
  redact: names("pino path").optional(),
  logLevel: z
    .enum(LOG_LEVELS, {
      error: (issue) => `must be a pino level (${LOG_LEVELS.join(", ")}), got ${shown(issue.input)}`,
    })
    .optional(),
  logger: pinoLogger.optional(),
  reconciler: section("reconciler", {
    intervalMs: milliseconds.optional(),
    staleMs: wholeNumber(0).optional(),
    leaseMs: milliseconds.optional(),
    batch: wholeNumber(1).optional(),
    recheckMs: wholeNumber(0).optional(),
    remember: wholeNumber(0).optional(),
    unknownTaskGraceMs: wholeNumber(0).optional(),
  }),
  admission: section("admission", { intervalMs: milliseconds.optional() }),
  alerts: section("alerts", { stuckScanMs: milliseconds.optional() }),
  metrics: section("metrics", { stuckAfterMs: milliseconds.optional() }),
  retention: section("retention", {
    intervalMs: milliseconds.optional(),
    batch: wholeNumber(1).optional(),
    pauseMs: wholeNumber(0).optional(),
  }),
  worker: section("worker", {
    heartbeatMs: milliseconds.optional(),
    leaseMs: milliseconds.optional(),
    lockDurationMs: milliseconds.optional(),
    stalledIntervalMs: milliseconds.optional(),
    deadWorkerRetentionMs: wholeNumber(0).optional(),
    durability: z.enum(["run", "step"], { error: (issue) => `must be "run" or "step", got ${shown(issue.input)}` }).optional(),
  }),
});
