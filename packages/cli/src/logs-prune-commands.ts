import { setTimeout as sleep } from "node:timers/promises";
import type { Command } from "commander";
import { z } from "zod";
import type { LogLineInfo } from "ax-scheduler";
import { TERMINAL_RUN_STATUSES } from "@ax/common";
import { durationFlagAtLeast, parseFlags, positiveInt } from "./options.js";
import { Eta } from "./progress.js";
import type { AdminApi } from "./admin-api.js";
import type { RunsApi } from "./runs-api.js";

type WithRunsApi = (fn: (client: RunsApi) => Promise<void>) => Promise<void>;
type WithAdminApi = (fn: (api: AdminApi) => Promise<void>) => Promise<void>;

const FOLLOW_POLL_MS = 1000;

/** One line: time, node#attempt, level, message, then its fields as JSON. */
export function renderLogLine(line: LogLineInfo): string {
  const fields = line.fields === null ? "" : ` ${JSON.stringify(line.fields)}`;
  return `${line.at} ${line.node}#${line.attempt} ${line.level.toUpperCase().padEnd(5)} ${line.msg}${fields}`;
}

/** `ax logs <run>`, `ax prune`. */
export function addLogsPruneCommands(program: Command, withRunsApi: WithRunsApi, withAdminApi: WithAdminApi): void {
  program
    .command("logs <runId>")
    .description("a run's task log lines (ax.context().log), per node and attempt; --follow prints new ones until the run ends")
    .option("--node <key>", "only this node")
    .option("--attempt <n>", "only this attempt")
    .option("--follow", "keep printing new lines until the run has finished")
    .action(async (runId: string, raw: Record<string, unknown>) => {
      const flags = parseFlags(
        z.object({ node: z.string().min(1).optional(), attempt: positiveInt.optional(), follow: z.boolean().optional() }),
        raw,
        "logs",
      );
      await withRunsApi(async (client) => {
        const query = { node: flags.node, attempt: flags.attempt };
        const seen = new Set<string>();
        const print = async () => {
          const logs = await client.getLogs(runId, query);
          for (const line of logs.lines) {
            const key = `${line.node}/${line.attempt}/${line.seq}`;
            if (seen.has(key)) continue;
            seen.add(key);
            console.log(renderLogLine(line));
          }
        };
        // On stderr, so that a script reading the lines gets none.
        const sayIfNone = () => {
          if (seen.size > 0) return;
          const which = [flags.node && `node ${flags.node}`, flags.attempt && `attempt ${flags.attempt}`].filter(Boolean).join(", ");
          console.error(`run ${runId} has no task log lines${which ? ` for ${which}` : ""} (a task writes them with ax.context().log)`);
        };
        if (!flags.follow) {
          await print();
          sayIfNone();
          return;
        }
        let stopped = false;
        const stop = () => {
          stopped = true;
        };
        process.once("SIGINT", stop);
        try {
          while (!stopped) {
            const { status } = await client.getRun(runId);
            await print();
            // Lines are written shortly after they are logged: one more look once the run has ended.
            if (TERMINAL_RUN_STATUSES.includes(status)) {
              await sleep(FOLLOW_POLL_MS);
              await print();
              break;
            }
            await sleep(FOLLOW_POLL_MS);
          }
        } finally {
          process.off("SIGINT", stop);
        }
        sayIfNone();
      });
    });

  program
    .command("prune")
    .description("delete (or --archive, then delete) finished runs and the rest of the history older than --older-than")
    .requiredOption("--older-than <duration>", 'e.g. "90d"; at least "1h"')
    .option("--archive", "copy runs, nodes, attempts and task logs into the *_archive tables first")
    .option("--dry-run", "only count what would be pruned")
    .option("--batch <n>", "runs per transaction", "1000")
    .action(async (raw: Record<string, unknown>) => {
      const flags = parseFlags(
        z.object({
          olderThan: durationFlagAtLeast(3_600_000, '1h (write a duration such as "90d", "30d" or "12h")'),
          archive: z.boolean().optional(),
          dryRun: z.boolean().optional(),
          batch: positiveInt,
        }),
        raw,
        "prune",
      );
      await withAdminApi(async (client) => {
        if (flags.dryRun) {
          const counts = await client.prune({ olderThan: flags.olderThan, dryRun: true });
          console.log(
            `would prune ${counts.runs} run(s) with their nodes, attempts and ${counts.logLines} task log line(s), ${counts.onceKeys} once key(s), ${counts.scheduleTicks} schedule tick(s), ${counts.alerts} sent alert(s) older than ${flags.olderThan}`,
          );
          return;
        }
        const { default: cliProgress } = await import("cli-progress");
        const bar = new cliProgress.SingleBar(
          { format: "prune [{bar}] {value}/{total} runs | ETA {remaining}", stream: process.stdout, noTTYOutput: true },
          cliProgress.Presets.shades_classic,
        );
        const abort = new AbortController();
        const stop = () => abort.abort();
        process.once("SIGINT", stop);
        const eta = new Eta(0);
        let started = false;
        try {
          const result = await client
            .prune({
              olderThan: flags.olderThan,
              archive: flags.archive,
              batch: flags.batch,
              signal: abort.signal,
              onProgress: (runs, total) => {
                if (!started) bar.start(total, 0, { remaining: eta.text(0, total) });
                started = true;
                bar.update(Math.min(runs, total), { remaining: eta.text(Math.min(runs, total), total) });
              },
            })
            .catch((error: unknown) => {
              // Through ax dev's API, Ctrl-C ends the call (and the prune after its current batch) without counts.
              if (!abort.signal.aborted) throw error;
              console.log("stopped by Ctrl-C before the counts came back; what was pruned stays pruned, run it again to continue");
              return undefined;
            });
          if (started) bar.stop();
          if (!result || !("archived" in result)) return;
          console.log(
            `${result.archived ? "archived and deleted" : "deleted"} ${result.runs} run(s) (${result.logLines} task log line(s)), ${result.onceKeys} once key(s), ${result.scheduleTicks} schedule tick(s), ${result.alerts} sent alert(s) older than ${flags.olderThan}` +
              (abort.signal.aborted ? "; stopped early by Ctrl-C, run it again to continue" : ""),
          );
        } finally {
          process.off("SIGINT", stop);
        }
      });
    });
}
