import { existsSync } from "node:fs";
import { userInfo } from "node:os";
import { resolve } from "node:path";
import { Command } from "commander";
import { Registry } from "prom-client";
import { z } from "zod";
import { axLogger, Client, LiveConfig, parseDuration, Runtime, type Duration, type Flow, type Role } from "ax-scheduler";
import { advertiseApi, dataDirHolder, migrate, openStore, RUN_STATUSES } from "@ax/store";
import { checkEvictionPolicy, closeRedis, connectRedis, DEFAULT_REDIS_URL, QueueRegistry } from "@ax/coordinator";
import { DEFAULT_STOP_TIMEOUT_MS } from "@ax/common";
import { startMetricsServer } from "@ax/server/metrics";
import { HttpRunsApi } from "./http-client.js";
import { loadFlows } from "./load-entry.js";
import { connectionFlags, parseFlags, positiveInt, type ConnectionFlags } from "./options.js";
import { renderBusyKeys, renderQueues } from "./render-queues.js";
import { printRunOrWait, renderRun } from "./render-run.js";
import type { RunsApi } from "./runs-api.js";
import { addScheduleCommands } from "./schedule-commands.js";
import { addRerunBackfillCommands } from "./rerun-backfill-commands.js";
import { addConfigCommands } from "./config-commands.js";
import { addAlertsCommands } from "./alerts-commands.js";
import { addLogsPruneCommands } from "./logs-prune-commands.js";
import { addTokenCommands } from "./token-commands.js";
import { watchConfigFile } from "./watch-config.js";

function connection(program: Command): ConnectionFlags {
  const o = program.opts();
  return parseFlags(
    connectionFlags,
    {
      storage: o.storage ?? process.env.DATABASE_URL,
      redis: o.redis ?? process.env.REDIS_URL,
      prefix: o.prefix ?? process.env.AX_PREFIX,
      dataDir: o.dataDir,
    },
    "",
  );
}

/** The config file `ax dev` watches when no --config is given, if it exists (DESIGN §1's project layout). */
const DEV_CONFIG = "config/runtime.yaml";

/** Where `ax dev` keeps its embedded history when no --data-dir is given (as `openStore` does). */
const DEFAULT_DATA_DIR = ".ax/data";

/**
 * A Client on the global connection flags (applying `flows`' key functions), closed after `fn`
 * whatever happens. An embedded data directory held by an `ax dev` is reached through that
 * process's HTTP API (which applies its own flows' key functions): PGlite serves one process only.
 */
async function withClient(program: Command, fn: (client: RunsApi) => Promise<void>, flows?: Flow<any>[]): Promise<void> {
  const flags = connection(program);
  const holder = flags.storage ? undefined : dataDirHolder(resolve(flags.dataDir ?? DEFAULT_DATA_DIR));
  const client: RunsApi = holder?.api ? new HttpRunsApi({ ...holder, api: holder.api }) : new Client({ ...flags, flows });
  try {
    await fn(client);
  } finally {
    await client.close();
  }
}

/**
 * A Client straight on the storage, for commands the HTTP API of `ax dev` does not serve (an
 * embedded directory held by another process is refused with AxDataDirLockedError, which says so).
 */
async function withDirectClient(program: Command, fn: (client: Client) => Promise<void>): Promise<void> {
  const client = new Client(connection(program));
  try {
    await fn(client);
  } finally {
    await client.close();
  }
}

/** A duration flag: seconds as a number, or a string like "30s" or "2m". */
const durationFlag = z.string().transform((text, ctx): Duration => {
  const value = /^\d+(\.\d+)?$/.test(text) ? Number(text) : text;
  try {
    parseDuration(value);
  } catch (error) {
    ctx.addIssue({ code: "custom", message: (error as Error).message });
    return z.NEVER;
  }
  return value;
});

/** Past the stop timeout, how long the process may take to close before it exits anyway. */
const EXIT_GRACE_MS = 4000;

/**
 * Runs until SIGINT/SIGTERM, then stops gracefully: in-flight attempts get `stopTimeout`, then are
 * handed back. The process exits within `stopTimeout` plus a few seconds whatever Redis and
 * PostgreSQL do; a second signal exits at once.
 */
async function serve(runtime: Runtime, what: string, stopTimeout: Duration, afterStart?: () => () => void): Promise<void> {
  await runtime.start();
  const unwatch = afterStart?.();
  runtime.log.info(
    { worker: runtime.workerId, api: runtime.url, console: runtime.url ? `${runtime.url}/` : undefined },
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

const roleCommand = (program: Command, name: string, roles: Role[], description: string) =>
  program
    .command(`${name} <entry>`)
    .description(description)
    .option(
      "--config <file>",
      "runtime.yaml: stored as version 1 when none is stored; `ax dev` applies it on every save (default config/runtime.yaml if it exists)",
    )
    .option("--concurrency <n>", "attempts at once in this process (default 10; YAML max_concurrency is the cluster-wide limit)")
    .option("--queues <names>", "comma-separated worker groups to serve")
    .option(
      "--durability <run|step>",
      "run: only a run's last step waits for the disk (a step may run again after a PostgreSQL crash); step: every step waits",
      "run",
    )
    .option("--port <port>", "API port (dev)", "8080")
    .option("--metrics-port <port>", "serve /metrics on this port (worker, coordinator)")
    .option(
      "--stop-timeout <duration>",
      "on SIGTERM, how long in-flight attempts may finish before they are handed back",
      `${DEFAULT_STOP_TIMEOUT_MS / 1000}s`,
    )
    .action(async (entry: string, raw: Record<string, string | undefined>) => {
      const flags = parseFlags(
        z.object({
          config: z.string().optional(),
          concurrency: positiveInt.optional(),
          queues: z.string().optional(),
          durability: z.enum(["run", "step"]),
          port: z.coerce.number().int().min(0).max(65535),
          metricsPort: z.coerce.number().int().min(0).max(65535).optional(),
          stopTimeout: durationFlag,
        }),
        raw,
        name,
      );
      const c = connection(program);
      const config = flags.config ?? (name === "dev" && existsSync(DEV_CONFIG) ? DEV_CONFIG : undefined);
      // Other processes (the CLI) reach an embedded history through this API while this one holds it.
      if (!c.storage && roles.includes("api") && flags.port !== 0) advertiseApi(`http://127.0.0.1:${flags.port}`);
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
        worker: { durability: flags.durability },
        // `ax dev` is a developer's own machine: its API and console need no token (docs/security.md).
        insecureNoAuth: name === "dev",
      });
      // `ax dev` applies the file on every save (and at start: the file being edited wins over the stored version).
      const watchConfig =
        name === "dev" && config !== undefined
          ? () => watchConfigFile(config, runtime.liveConfig, `${process.env.USER ?? userInfo().username} (ax dev)`, runtime.log)
          : undefined;
      await serve(runtime, name, flags.stopTimeout, watchConfig);
    });

export async function main(argv: string[]): Promise<void> {
  const program = new Command("ax")
    .description("ax: flows of tasks on BullMQ and PostgreSQL")
    .option("--storage <url>", "PostgreSQL URL (default: $DATABASE_URL, else embedded PGlite in ./.ax/data)")
    .option("--data-dir <dir>", "embedded PGlite directory")
    .option("--redis <url>", "Redis URL (default: $REDIS_URL or redis://127.0.0.1:6379)")
    .option("--prefix <prefix>", "Redis key prefix (default: $AX_PREFIX or ax)");

  roleCommand(program, "dev", ["coordinator", "worker", "api"], "everything in one process, API and metrics on --port");
  roleCommand(program, "worker", ["worker"], "run attempts of the entry's tasks");
  roleCommand(program, "coordinator", ["coordinator"], "reconcile PostgreSQL and Redis");

  program
    .command("server [entry]")
    .description("the HTTP API and /metrics; with <entry>, triggers apply its flows' idempotencyKey/businessKey functions")
    .option("--port <port>", "API port", "8080")
    .option("--host <host>", "listen address", "127.0.0.1")
    .option("--config <file>", "runtime.yaml overriding flow options (with <entry>)")
    .option("--insecure-no-auth", "serve every route without a token (only on a network you trust)")
    .option("--public-metrics", "serve /metrics on the API port without a token (default: a token of any scope)")
    .option("--metrics-port <port>", "also serve /metrics, without a token, on this port (keep it off the public network)")
    .action(async (entry: string | undefined, raw: Record<string, unknown>) => {
      const flags = parseFlags(
        z.object({
          port: z.coerce.number().int().min(0).max(65535),
          host: z.string(),
          config: z.string().optional(),
          insecureNoAuth: z.boolean().optional(),
          publicMetrics: z.boolean().optional(),
          metricsPort: z.coerce.number().int().min(0).max(65535).optional(),
        }),
        raw,
        "server",
      );
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

  program
    .command("trigger <flow>")
    .description("start a run of a flow")
    .option("--payload <json>", "the run's input, as JSON", "null")
    .option("--idempotency-key <key>", "a second trigger with this key returns the first run")
    .option("--business-key <key>", "searchable business id (order id, batch id)")
    .option("--entry <file>", "the flows' code, so that the flow's own idempotencyKey/businessKey functions apply")
    .option("--delay <duration>", "start the run's first nodes this long from now")
    .option("--priority <n>", "BullMQ priority of every job of the run, 1 served first")
    .option("--wait", "wait for the run to finish and print it")
    .option("--timeout <duration>", "how long --wait waits", "60s")
    .action(async (flow: string, raw: Record<string, unknown>) => {
      const flags = parseFlags(
        z.object({
          payload: z.string().transform((text, ctx) => {
            try {
              return JSON.parse(text) as unknown;
            } catch (error) {
              ctx.addIssue({ code: "custom", message: `not JSON (${(error as Error).message})` });
              return z.NEVER;
            }
          }),
          idempotencyKey: z.string().min(1).optional(),
          businessKey: z.string().min(1).optional(),
          entry: z.string().min(1).optional(),
          delay: durationFlag.optional(),
          priority: positiveInt.optional(),
          wait: z.boolean().optional(),
          timeout: z.string(),
        }),
        raw,
        "trigger",
      );
      const flows = flags.entry ? await loadFlows(flags.entry) : undefined;
      await withClient(
        program,
        async (client) => {
          const runId = await client.triggerFlow(flow, flags.payload, {
            idempotencyKey: flags.idempotencyKey,
            businessKey: flags.businessKey,
            delay: flags.delay,
            priority: flags.priority,
          });
          await printRunOrWait(client, runId, flags);
        },
        flows,
      );
    });

  program
    .command("run <id>")
    .description("show a run: each node of its DAG with state, attempts and errors")
    .option("--json", "print RunInfo as JSON")
    .action(async (id: string, raw: { json?: boolean }) => {
      await withClient(program, async (client) => {
        const run = await client.getRun(id);
        console.log(raw.json ? JSON.stringify(run, null, 2) : renderRun(run));
      });
    });

  program
    .command("cancel <id>")
    .description("cancel a run: queued nodes are removed, running attempts are aborted, the run ends cancelled")
    .option("--json", "print the result as JSON")
    .action(async (id: string, raw: { json?: boolean }) => {
      await withClient(program, async (client) => {
        const result = await client.cancel(id);
        if (raw.json) console.log(JSON.stringify(result));
        else if (result.cancelled) console.log(`run ${id} cancelled (${result.removedJobs} queued job(s) removed)`);
        else console.log(`run ${id} is already ${result.status}; nothing changed`);
      });
    });

  program
    .command("runs")
    .description("list recent runs, newest first")
    .option("--flow <name>")
    .option("--status <status>")
    .option("--business-key <key>")
    .option("--limit <n>", "how many", "20")
    .action(async (raw: Record<string, string | undefined>) => {
      const filter = parseFlags(
        z.object({
          flow: z.string().optional(),
          status: z.enum(RUN_STATUSES).optional(),
          businessKey: z.string().optional(),
          limit: positiveInt,
        }),
        raw,
        "runs",
      );
      await withClient(program, async (client) => {
        for (const run of await client.listRuns(filter)) {
          console.log([run.id, run.flow, run.status.padEnd(9), run.trigger.padEnd(8), run.createdAt, run.businessKey ?? ""].join("  "));
        }
      });
    });

  program
    .command("queues")
    .description("each task queue: waiting, active, delayed, the limit holding it, live workers serving it")
    .option("--keys <task>", "the task's business keys with runs waiting on their concurrency limit, busiest first")
    .option("--json", "print them as JSON")
    .action(async (raw: { json?: boolean; keys?: string }) => {
      await withDirectClient(program, async (client) => {
        if (raw.keys) {
          const keys = await client.listBusyKeys(raw.keys);
          console.log(raw.json ? JSON.stringify(keys, null, 2) : renderBusyKeys(raw.keys, keys));
          return;
        }
        const queues = await client.listQueues();
        console.log(raw.json ? JSON.stringify(queues, null, 2) : renderQueues(queues));
      });
    });

  addScheduleCommands(program, (fn) => withDirectClient(program, fn));
  addRerunBackfillCommands(program, (fn) => withDirectClient(program, fn));
  addConfigCommands(program, (fn) => withDirectClient(program, fn));
  addAlertsCommands(program, (fn) => withDirectClient(program, fn));
  addLogsPruneCommands(
    program,
    (fn) => withClient(program, fn),
    (fn) => withDirectClient(program, fn),
  );
  addTokenCommands(program, (fn) => withDirectClient(program, fn));

  program
    .command("migrate")
    .description("apply the database migrations")
    .action(async () => {
      const c = connection(program);
      const store = openStore({ url: c.storage, dataDir: c.dataDir });
      try {
        await migrate(store);
        console.log(`migrations applied (${store.kind}, schema ${store.schema})`);
      } finally {
        await store.close();
      }
    });

  try {
    await program.parseAsync(argv);
  } catch (error) {
    console.error(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
    process.exitCode = 1;
  }
}
