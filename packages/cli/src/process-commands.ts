import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { userInfo } from "node:os";
import type { Command } from "commander";
import { Registry } from "prom-client";
import { z } from "zod";
import { axLogger, LiveConfig, parseDuration, Runtime, type Duration, type Role } from "ax-scheduler";
import { advertiseApi, migrate, openStore } from "@ax/store";
import { checkEvictionPolicy, closeRedis, connectRedis, DEFAULT_REDIS_URL, QueueRegistry } from "@ax/coordinator";
import { DEFAULT_DATA_DIR, DEFAULT_STOP_TIMEOUT_MS } from "@ax/common";
import { startMetricsServer } from "@ax/server/metrics";
import { loadFlows } from "./load-entry.js";
import { durationFlag, parseFlags, positiveInt, wholeNumber } from "./options.js";
import { connection } from "./shared.js";
import type { ConnectionFlags } from "./options.js";
import { watchConfigFile } from "./watch-config.js";
import { stopWithSupervisor, superviseDev, SUPERVISED_ENV } from "./dev-watch.js";

/** The config file `ax dev` watches when no --config is given, if it exists (DESIGN §1's project layout). */
const DEV_CONFIG = "config/runtime.yaml";

/** Past the stop timeout, how long the process may take to close before it exits anyway. */
const EXIT_GRACE_MS = 4000;

/**
 * Runs until SIGINT/SIGTERM, then stops gracefully: in-flight attempts get `stopTimeout`, then are
 * handed back. The process exits within `stopTimeout` plus a few seconds whatever Redis and
 * PostgreSQL do; a second signal exits at once.
 */
async function serve(
  runtime: Runtime,
  what: string,
  stopTimeout: Duration,
  afterStart?: () => () => void,
  history?: string,
): Promise<void> {
  await runtime.start();
  const unwatch = afterStart?.();
  runtime.log.info(
    { worker: runtime.workerId, api: runtime.url, console: runtime.url ? `${runtime.url}/` : undefined, history },
    `ax ${what} started`,
  );
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  const force = (again: NodeJS.Signals) => {
    runtime.log.warn({ signal: again }, `ax ${what}: second signal, exiting without waiting`);
    process.exit(130);
  };
  process.once("SIGINT", force);
  process.once("SIGTERM", force);
  const hardExit = setTimeout(() => {
    runtime.log.error(`ax ${what} did not stop within its stop timeout; exiting anyway`);
    process.exit(1);
  }, parseDuration(stopTimeout) + EXIT_GRACE_MS);
  hardExit.unref();
  runtime.log.info({ signal, stopTimeout }, `ax ${what} stopping`);
  unwatch?.();
  await runtime.stop({ timeout: stopTimeout });
  runtime.log.info(`ax ${what} stopped`);
  // A task that ignored its abort may still hold timers or sockets: they must not keep the process.
  process.exit(process.exitCode ?? 0);
}

/**
 * Where the process keeps its history, for its start line: a history that seems gone is most
 * often another one (a directory of its own under another working directory, another schema).
 */
function historyOf(c: ConnectionFlags): string {
  if (c.storage) {
    const url = new URL(c.storage);
    return `postgres ${url.host}${url.pathname} schema ${url.searchParams.get("schema") ?? "public"}`;
  }
  const dir = resolve(c.dataDir ?? DEFAULT_DATA_DIR);
  return `${dir}${existsSync(dir) ? "" : " (new)"}`;
}

const port = wholeNumber.min(0, { error: "expected a port, 0 to 65535" }).max(65535, { error: "expected a port, 0 to 65535" });

/** Each command offers the flags of its roles only: the worker's run attempts, the API's listens. */
function roleCommand(program: Command, name: string, roles: Role[], description: string): void {
  const command = program
    .command(`${name} <entry>`)
    .description(description)
    .option(
      "--config <file>",
      "runtime.yaml: stored as version 1 when none is stored; `ax dev` applies it on every save (default config/runtime.yaml if it exists)",
    );
  if (roles.includes("worker")) {
    command
      .option("--concurrency <n>", "attempts at once in this process (default 10; YAML max_concurrency is the cluster-wide limit)")
      .option("--queues <names>", "comma-separated worker groups to serve")
      .option(
        "--durability <run|step>",
        "run: only a run's last step waits for the disk (a step may run again after a PostgreSQL crash); step: every start and completion waits",
        "run",
      );
  }
  if (roles.includes("api")) command.option("--port <port>", "API, console and /metrics port", "8080");
  if (name === "dev")
    command.option("--watch", "restart when a code file of the entry's project changes (the config file is applied live)");
  command
    .option("--metrics-port <port>", "serve /metrics and /healthz on this port")
    .option(
      "--stop-timeout <duration>",
      roles.includes("worker")
        ? "on SIGTERM, how long in-flight attempts may finish before they are handed back"
        : "on SIGTERM, how long stopping may take before the process exits anyway",
      `${DEFAULT_STOP_TIMEOUT_MS / 1000}s`,
    )
    .action(async (entry: string, raw: Record<string, string | undefined>) => {
      const flags = parseFlags(
        z.object({
          config: z.string().optional(),
          concurrency: positiveInt.optional(),
          queues: z.string().optional(),
          durability: z.enum(["run", "step"]).optional(),
          port: port.optional(),
          metricsPort: port.optional(),
          stopTimeout: durationFlag,
          watch: z.boolean().optional(),
        }),
        raw,
        name,
      );
      const config = flags.config ?? (name === "dev" && existsSync(DEV_CONFIG) ? DEV_CONFIG : undefined);
      if (flags.watch && !process.env[SUPERVISED_ENV]) await superviseDev(entry, axLogger(), config === undefined ? [] : [config]);
      stopWithSupervisor();
      const c = connection(program);
      // Other processes (the CLI) reach an embedded history through this API while this one holds it.
      if (!c.storage && flags.port !== undefined && flags.port !== 0) advertiseApi(`http://127.0.0.1:${flags.port}`);
      const runtime = new Runtime({
        ...c,
        flows: await loadFlows(entry),
        config,
        maxConcurrency: flags.concurrency,
        queues: flags.queues
          ?.split(",")
          .map((q) => q.trim())
          .filter(Boolean),
        roles,
        port: flags.port,
        metricsPort: flags.metricsPort,
        worker: flags.durability === undefined ? undefined : { durability: flags.durability },
        // `ax dev` is a developer's own machine: its API and console need no token (docs/security.md).
        insecureNoAuth: name === "dev",
      });
      // `ax dev` applies the file on every save (and at start: the file being edited wins over the stored version).
      const watchConfig =
        name === "dev" && config !== undefined
          ? () => watchConfigFile(config, runtime.liveConfig, `${process.env.USER ?? userInfo().username} (ax dev)`, runtime.log)
          : undefined;
      await serve(runtime, name, flags.stopTimeout, watchConfig, historyOf(c));
    });
}

/** `ax dev|worker|coordinator|server`: long-running processes, stopped by SIGINT/SIGTERM. */
export function addProcessCommands(program: Command): void {
  roleCommand(
    program,
    "dev",
    ["coordinator", "worker", "api"],
    "everything in one process (coordinator, worker, API); API, console and /metrics on --port",
  );
  roleCommand(program, "worker", ["worker"], "run attempts of the entry's tasks");
  roleCommand(
    program,
    "coordinator",
    ["coordinator"],
    "tick the entry's flows' schedules, reconcile PostgreSQL and Redis, dispatch runs triggered in producers' transactions, " +
      "release held runs (maxConcurrentRuns, backfills), prune history (YAML retention) and raise alerts",
  );

  program
    .command("server [entry]")
    .description("the HTTP API and /metrics; with <entry>, triggers apply its flows' idempotencyKey/businessKey functions")
    .option("--port <port>", "API port", "8080")
    .option("--host <host>", "listen address", "127.0.0.1")
    .option("--config <file>", "runtime.yaml overriding flow options (with <entry>)")
    .option("--insecure-no-auth", "serve every route without a token (only on a network you trust)")
    .option("--public-metrics", "serve /metrics on the API port without a token (default: a token of any scope)")
    .option("--metrics-port <port>", "also serve /metrics, without a token, on this port (keep it off the public network)")
    .option("--stuck-after <duration>", "a run running longer than this counts in ax_runs_stuck", "1h")
    .action(async (entry: string | undefined, raw: Record<string, unknown>) => {
      const flags = parseFlags(
        z.object({
          port,
          host: z.string(),
          config: z.string().optional(),
          insecureNoAuth: z.boolean().optional(),
          publicMetrics: z.boolean().optional(),
          metricsPort: port.optional(),
          stuckAfter: durationFlag,
        }),
        raw,
        "server",
      );
      const stuckAfterMs = parseDuration(flags.stuckAfter);
      const auth = { insecureNoAuth: flags.insecureNoAuth ?? false, metricsAuth: !flags.publicMetrics };
      if (entry) {
        const runtime = new Runtime({
          ...connection(program),
          flows: await loadFlows(entry),
          config: flags.config,
          roles: ["api"],
          port: flags.port,
          host: flags.host,
          metricsPort: flags.metricsPort,
          metrics: { stuckAfterMs },
          ...auth,
        });
        await serve(runtime, "server", "5s");
        return;
      }
      const c = connection(program);
      const store = openStore({ url: c.storage, dataDir: c.dataDir });
      await migrate(store);
      const log = axLogger();
      const redis = connectRedis(c.redis ?? DEFAULT_REDIS_URL, log);
      const queues = new QueueRegistry(redis, c.prefix ?? "ax", log);
      const registry = new Registry();
      await checkEvictionPolicy(redis, log, registry);
      try {
        const { startServer } = await import("@ax/server");
        const server = await startServer({
          db: store.db,
          queues,
          registry,
          log,
          port: flags.port,
          host: flags.host,
          config: new LiveConfig(store.db, redis, queues.prefix),
          auth,
          stuckAfterMs,
        });
        const metrics = flags.metricsPort === undefined ? undefined : await startMetricsServer(registry, flags.metricsPort, flags.host);
        log.info(
          { url: server.url, console: `${server.url}/` },
          "ax server started without flow code: triggers take their keys from the request only (give the entry file to apply the flows' key functions)",
        );
        await new Promise<void>((resolve) => {
          process.once("SIGINT", resolve);
          process.once("SIGTERM", resolve);
        });
        await server.close();
        await metrics?.close();
      } finally {
        await queues.close();
        closeRedis(redis);
        await store.close();
      }
    });
}
