import { existsSync } from "node:fs";
import type { Command } from "commander";
import { z } from "zod";
import type { Role } from "ax-scheduler";
import { DEFAULT_STOP_TIMEOUT_MS } from "@ax/common";
import { durationFlag, parseFlags, positiveInt, queueListFlag, wholeNumber } from "./options.js";
import { AxUsageError } from "./errors.js";
import { connection } from "./shared.js";
import { stopWithSupervisor, superviseDev, SUPERVISED_ENV } from "./dev-watch.js";

/** The config file `ax dev` watches when no --config is given, if it exists (DESIGN §1's project layout). */
const DEV_CONFIG = "config/runtime.yaml";

const port = wholeNumber.min(0, { error: "expected a port, 0 to 65535" }).max(65535, { error: "expected a port, 0 to 65535" });

/** Each command offers the flags of its roles only: the worker's run attempts, the API's listens. */
function roleCommand(program: Command, name: string, roles: Role[], description: string): void {
  const command = program
    .command(`${name} <entry>`)
    .description(description)
    .option(
      "--config <file>",
      // Only `ax dev` falls back to DEV_CONFIG: a worker or coordinator reads no file it was not given.
      name === "dev"
        ? `runtime.yaml: stored as version 1 when none is stored, then applied on every save (default ${DEV_CONFIG} if it exists)`
        : "runtime.yaml: stored as version 1 when none is stored; after that the stored version wins (change it with `ax config apply`)",
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
  if (roles.includes("api")) command.option("--port <port>", "API, console and /metrics port (default: $AX_PORT, else 8080)");
  if (name === "dev")
    command.option("--watch", "restart when a code file of the entry's project changes (the config file is applied live)");
  command
    .option("--metrics-port <port>", "serve /metrics, /healthz and /readyz on this port")
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
          queues: queueListFlag.optional(),
          durability: z.enum(["run", "step"]).optional(),
          port: port.optional(),
          metricsPort: port.optional(),
          stopTimeout: durationFlag,
          watch: z.boolean().optional(),
        }),
        roles.includes("api") ? { ...raw, port: raw.port ?? defaultPort() } : raw,
        name,
      );
      const config = flags.config ?? (name === "dev" && existsSync(DEV_CONFIG) ? DEV_CONFIG : undefined);
      // Checked before a watcher starts: a bad --storage or DATABASE_URL is this command's usage error, not its child's.
      const connected = connection(program);
      if (flags.watch && !process.env[SUPERVISED_ENV]) {
        const { axLogger } = await import("ax-scheduler");
        await superviseDev(entry, axLogger(), config === undefined ? [] : [config]);
      }
      stopWithSupervisor();
      const { runRole } = await import("./process-run.js");
      await runRole(connected, entry, name, roles, flags, config);
    });
}

/** `--port` unset: `$AX_PORT` (an empty one counts as unset, like the connection variables), else 8080. */
function defaultPort(): string {
  return process.env.AX_PORT || "8080";
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
    .option("--port <port>", "API port (default: $AX_PORT, else 8080)")
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
        { ...raw, port: raw.port ?? defaultPort() },
        "server",
      );
      if (flags.config !== undefined && entry === undefined) {
        throw new AxUsageError(
          "ax server: --config needs <entry>, the flows the file overrides; without one the server follows the stored config versions (`ax config apply <file>` stores a file)",
        );
      }
      const { runServer } = await import("./process-run.js");
      await runServer(connection(program), entry, flags);
    });
}
