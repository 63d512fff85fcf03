import { createRequire } from "node:module";
import { Command } from "commander";
import { addProcessCommands } from "./process-commands.js";
import { renderBusyKeys, renderQueues, unknownTaskNote } from "./render-queues.js";
import { addRunCommands } from "./run-commands.js";
import { connection, withAdminApi, withClient, withConfigApi, withTokenApi } from "./shared.js";
import { addScheduleCommands } from "./schedule-commands.js";
import { addFlowCommands } from "./flow-commands.js";
import { addRerunBackfillCommands } from "./rerun-backfill-commands.js";
import { addConfigCommands } from "./config-commands.js";
import { addAlertsCommands } from "./alerts-commands.js";
import { addLogsPruneCommands } from "./logs-prune-commands.js";
import { addTokenCommands } from "./token-commands.js";
import { addAuditCommand } from "./audit-command.js";
import type { AdminApi } from "./admin-api.js";
import type { RunsApi } from "./runs-api.js";

/** This package's version; every ax package carries the same one. */
const { version } = createRequire(import.meta.url)("../package.json") as { version: string };

export async function main(argv: string[]): Promise<void> {
  const program = new Command("ax")
    .description("ax: flows of tasks on BullMQ and PostgreSQL")
    .version(version, "-V, --version", "print the version of ax")
    .option("--storage <url>", "PostgreSQL URL (default: $DATABASE_URL, else embedded PGlite in ./.ax/data)")
    .option("--data-dir <dir>", "embedded PGlite directory, when no PostgreSQL URL is given (default: ./.ax/data)")
    .option("--redis <url>", "Redis URL (default: $REDIS_URL or redis://127.0.0.1:6379)")
    .option("--prefix <prefix>", "Redis key prefix (default: $AX_PREFIX or ax)")
    // Commander's own refusals (an unknown flag, a missing argument) read like every other,
    // naming the command being parsed: `AxUsageError: ax runs: unknown option '--bogus'`.
    .configureOutput({
      outputError: (message, write) => write(message.replace(/^error: /, parsing ? `AxUsageError: ${parsing}: ` : "AxUsageError: ")),
    });
  let parsing = "";

  const routed = (fn: (client: RunsApi) => Promise<void>) => withClient(program, fn);
  const admin = (fn: (api: AdminApi) => Promise<void>) => withAdminApi(program, fn);

  addProcessCommands(program);
  addRunCommands(program);

  program
    .command("queues")
    .description("each task queue: waiting, active, delayed, the limit holding it, live workers serving it")
    .option("--keys <task>", "the task's business keys with runs waiting on their concurrency limit, busiest first")
    .option("--json", "print them as JSON")
    .action(async (raw: { json?: boolean; keys?: string }) => {
      await routed(async (client) => {
        if (raw.keys) {
          const keys = await client.listBusyKeys(raw.keys);
          // Nothing waiting and no queue of that task now: perhaps a misspelt name, perhaps a task at rest
          // with its workers stopped. Queues list only tasks with work or a worker, so this is a note, not a refusal.
          const note =
            keys.length === 0
              ? unknownTaskNote(
                  raw.keys,
                  (await client.listQueues()).map((q) => q.task),
                )
              : undefined;
          if (note) console.error(note);
          console.log(raw.json ? JSON.stringify(keys, null, 2) : renderBusyKeys(raw.keys, keys));
          return;
        }
        const queues = await client.listQueues();
        console.log(raw.json ? JSON.stringify(queues, null, 2) : renderQueues(queues));
      });
    });

  addScheduleCommands(program, routed);
  addFlowCommands(program, routed);
  addRerunBackfillCommands(program, routed);
  addConfigCommands(program, (fn) => withConfigApi(program, fn));
  addAlertsCommands(program, (fn) => withConfigApi(program, fn), admin);
  addLogsPruneCommands(program, routed, admin);
  addTokenCommands(program, (fn) => withTokenApi(program, fn));
  addAuditCommand(program, admin);

  program
    .command("migrate")
    .description("apply the database migrations")
    .action(async () => {
      const c = connection(program);
      const { migrate, openStore } = await import("@ax/store");
      const store = openStore({ url: c.storage, dataDir: c.dataDir });
      try {
        const { created } = await migrate(store);
        console.log(`migrations applied (${store.kind}, schema ${store.schema}${created ? ", new: it had no ax history" : ""})`);
      } finally {
        await store.close();
      }
    });

  followParsing(program, "ax", (path) => {
    parsing = path;
  });
  try {
    await program.parseAsync(argv);
  } catch (error) {
    console.error(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
    process.exitCode = 1;
  }
}

/** Tells `parsed` the path of each subcommand as commander turns to it ("ax config apply"), before it reads its flags. */
function followParsing(parent: Command, path: string, parsed: (path: string) => void): void {
  parent.hook("preSubcommand", (_parent, sub) => parsed(`${path} ${sub.name()}`));
  for (const command of parent.commands) followParsing(command, `${path} ${command.name()}`, parsed);
}
