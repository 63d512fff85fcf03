import { existsSync } from "node:fs";
import { constants } from "node:os";
import { resolve } from "node:path";
import { Registry } from "prom-client";
import { axLogger, LiveConfig, parseDuration, pruneHistory, reportStandaloneApi, Runtime, type Duration, type Role } from "ax-scheduler";
import { advertiseApi, migrate, NEW_SCHEMA, openStore } from "@ax/store";
import { checkEvictionPolicy, checkRedisVersion, closeRedis, connectRedis, DEFAULT_REDIS_URL, QueueRegistry } from "@ax/coordinator";
import { DEFAULT_DATA_DIR, localConfigAuthor } from "@ax/common";
import { startMetricsServer } from "@ax/server/metrics";
import { loadFlows } from "./load-entry.js";
import type { ConnectionFlags } from "./options.js";
import { watchConfigFile } from "./watch-config.js";

// What `ax dev|worker|coordinator|server` run once their flags are read: the runtime and its
// storage, loaded only by these commands.

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
  prefix?: string,
): Promise<void> {
  await runtime.start();
  const unwatch = afterStart?.();
  runtime.log.info(
    // The prefix too: processes on different prefixes never see each other's jobs.
    { worker: runtime.workerId, api: runtime.url, console: runtime.url ? `${runtime.url}/` : undefined, history, prefix },
    `ax ${what} started`,
  );
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  const force = (again: NodeJS.Signals) => {
    runtime.log.warn({ signal: again }, `ax ${what}: second signal, exiting without waiting`);
    // As a shell reports a process a signal ended: 130 for SIGINT, 143 for SIGTERM.
    process.exit(128 + constants.signals[again]);
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

/** The flags of `ax dev|worker|coordinator`, read. */
export interface RoleFlags {
  concurrency?: number | undefined;
  queues?: string[] | undefined;
  durability?: "run" | "step" | undefined;
  port?: number | undefined;
  metricsPort?: number | undefined;
  stopTimeout: Duration;
}

/** `ax dev|worker|coordinator <entry>` until SIGINT/SIGTERM. */
export async function runRole(
  c: ConnectionFlags,
  entry: string,
  name: string,
  roles: Role[],
  flags: RoleFlags,
  config: string | undefined,
): Promise<void> {
  // Other processes (the CLI) reach an embedded history through this API while this one holds it.
  if (!c.storage && flags.port !== undefined && flags.port !== 0) advertiseApi(`http://127.0.0.1:${flags.port}`);
  const runtime = new Runtime({
    ...c,
    // serve() handles the signals: its stop timeout, a second signal exiting at once.
    stopOnSignals: false,
    flows: await loadFlows(entry),
    config,
    // The file being edited is the one in force, from the start on.
    configFileWins: name === "dev",
    maxConcurrency: flags.concurrency,
    queues: flags.queues,
    roles,
    port: flags.port,
    metricsPort: flags.metricsPort,
    worker: flags.durability === undefined ? undefined : { durability: flags.durability },
    // `ax dev` is a developer's own machine: its API and console need no token (docs/security.md).
    insecureNoAuth: name === "dev",
  });
  const history = historyOf(c);
  if (!c.storage && name !== "dev") {
    // PGlite serves one process: a worker or coordinator on it is a cluster of one that nothing else can reach.
    runtime.log.warn(
      { history },
      `ax ${name} keeps its history in embedded PGlite, which only this process can open: no other process (ax trigger, a coordinator, another worker) can reach it. For a cluster, give every process the same PostgreSQL URL (--storage or DATABASE_URL); on one machine, ax dev runs every role in one process and serves the CLI.`,
    );
  }
  // `ax dev` applies the file on every save.
  const watchConfig =
    name === "dev" && config !== undefined
      ? () => watchConfigFile(config, runtime.liveConfig, localConfigAuthor("ax dev"), runtime.log)
      : undefined;
  await serve(runtime, name, flags.stopTimeout, watchConfig, history, c.prefix ?? "ax");
}

/** The flags of `ax server`, read. */
export interface ServerFlags {
  port: number;
  host: string;
  config?: string | undefined;
  insecureNoAuth?: boolean | undefined;
  publicMetrics?: boolean | undefined;
  metricsPort?: number | undefined;
  stuckAfter: Duration;
}

/** `ax server [entry]` until SIGINT/SIGTERM. */
export async function runServer(c: ConnectionFlags, entry: string | undefined, flags: ServerFlags): Promise<void> {
  const stuckAfterMs = parseDuration(flags.stuckAfter);
  const auth = { insecureNoAuth: flags.insecureNoAuth ?? false, metricsAuth: !flags.publicMetrics };
  if (entry) {
    const runtime = new Runtime({
      ...c,
      stopOnSignals: false,
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
  const store = openStore({ url: c.storage, dataDir: c.dataDir });
  const { created } = await migrate(store);
  const log = axLogger();
  if (created) log.warn({ schema: store.schema }, NEW_SCHEMA);
  const redis = connectRedis(c.redis ?? DEFAULT_REDIS_URL, log);
  const queues = new QueueRegistry(redis, c.prefix ?? "ax", log);
  const registry = new Registry();
  await checkRedisVersion(redis, log);
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
      history: { prune: (request) => pruneHistory(store, request) },
      auth,
      stuckAfterMs,
    });
    const metrics =
      flags.metricsPort === undefined
        ? undefined
        : await startMetricsServer(registry, flags.metricsPort, flags.host, { db: store.db, redis });
    // Listed by `ax config show --cluster` and the console's Workers page, as a Runtime's API is.
    const report = await reportStandaloneApi({ store, redis, prefix: queues.prefix, log });
    log.info(
      { url: server.url, console: `${server.url}/` },
      "ax server started without flow code: triggers take their keys from the request only (give the entry file to apply the flows' key functions)",
    );
    await new Promise<void>((resolve) => {
      process.once("SIGINT", resolve);
      process.once("SIGTERM", resolve);
    });
    await report.stop();
    await server.close();
    await metrics?.close();
  } finally {
    await queues.close();
    closeRedis(redis);
    await store.close();
  }
}
