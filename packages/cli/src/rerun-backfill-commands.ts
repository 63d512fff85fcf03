import { setTimeout as sleep } from "node:timers/promises";
import type { Command } from "commander";
import { z } from "zod";
import type { BackfillInfo } from "ax-scheduler";
import { AxUsageError } from "./errors.js";
import { dateFlag, durationFlagAtLeast, jsonFlag, parseFlags, positiveInt, refuseTimeoutWithoutWait } from "./options.js";
import { Eta, Stall } from "./progress.js";
import { printRunOrWait } from "./render-run.js";
import type { RunsApi } from "./runs-api.js";

type WithClient = (fn: (client: RunsApi) => Promise<void>) => Promise<void>;

/** More ticks than this need `--yes`. */
const CONFIRM_TICKS = 10_000;
const POLL_MS = 500;
/** Nothing running and nothing ending for this long: the bar says why that may be. */
const STALLED_MS = 15_000;

/** `ax rerun`, `ax backfill`, `ax backfill cancel`, `ax backfills`; they also reach an `ax dev`'s embedded history through its API. */
export function addRerunBackfillCommands(program: Command, withClient: WithClient): void {
  program
    .command("rerun <id>")
    .description("start a new run repeating a finished one: its failed nodes (default), from a node, or all")
    .option("--failed", "re-execute failed, skipped and cancelled nodes and their descendants (default)")
    .option("--from <node>", "re-execute this node and its descendants, reusing the rest")
    .option("--all", "re-execute every node")
    .option("--payload <json>", "the new run's input (default: the original's)")
    .option("--wait", "wait for the new run to finish and print it")
    .option("--timeout <duration>", "how long --wait waits", "60s")
    .action(async (id: string, raw: Record<string, unknown>, command: Command) => {
      refuseTimeoutWithoutWait(command, "rerun");
      const flags = parseFlags(
        z
          .object({
            failed: z.boolean().optional(),
            from: z.string().min(1).optional(),
            all: z.boolean().optional(),
            payload: jsonFlag.optional(),
            wait: z.boolean().optional(),
            timeout: durationFlagAtLeast(1, "1ms"),
          })
          .superRefine((f, ctx) => {
            // --failed with --from is --from, which re-executes the nodes that did not succeed too; --all leaves nothing to choose.
            const given = [f.failed && "--failed", f.from !== undefined && "--from"].filter(Boolean);
            if (f.all && given.length > 0) {
              ctx.addIssue({
                code: "custom",
                message: `--all and ${given.join(" and ")} together: --all re-executes every node; give it alone, or --failed or --from <node>`,
                path: [],
              });
            }
          }),
        raw,
        "rerun",
      );
      await withClient(async (client) => {
        const only = flags.from !== undefined ? undefined : flags.all ? "all" : "failed";
        const runId = await client.rerun(id, { only, from: flags.from, payload: flags.payload });
        await printRunOrWait(client, runId, flags);
      });
    });

  program
    .command("backfill <flow> [id]")
    .description(
      "one run per schedule tick of <flow> in [--from, --to), a few at a time, with a progress bar; `ax backfill cancel <id>` cancels one, `ax backfill retry <id>` reruns its failed ticks",
    )
    .option("--from <date>", "first tick included: 2026-01-01 (midnight UTC) or a date-time with its offset, 2026-01-01T02:00:00+01:00")
    .option("--to <date>", "end of the range, excluded (same forms as --from)")
    .option("--max-concurrent <n>", "runs at once (default: the flow's maxConcurrentRuns, else 10)")
    .option("--yes", `allow more than ${CONFIRM_TICKS} ticks`)
    .action(async (flow: string, id: string | undefined, raw: Record<string, unknown>) => {
      if (flow === "cancel") {
        if (id === undefined)
          throw new AxUsageError("ax backfill cancel: missing <id>, the backfill to cancel; list backfills with `ax backfills`");
        await withClient(async (client) => {
          const before = await client.getBackfill(id);
          const result = await client.cancelBackfill(id);
          // A backfill with no unfinished run is left as it was: say what it is, not that it was cancelled now.
          const { status } = await client.getBackfill(id);
          if (before.status === "cancelled") console.log(`backfill ${id} was already cancelled: nothing to do`);
          else if (status === "finished")
            console.log(`backfill ${id} is finished: nothing to cancel (its failed ticks can still be retried)`);
          else console.log(`backfill ${id} cancelled: ${result.cancelledRuns} run(s) cancelled; runs not started yet will not run`);
        });
        return;
      }
      if (flow === "retry") {
        if (id === undefined)
          throw new AxUsageError(
            "ax backfill retry: missing <id>, the backfill whose failed ticks to rerun; list backfills with `ax backfills`",
          );
        await withClient(async (client) => {
          const { retried, maxConcurrentRuns } = await client.retryBackfill(id);
          if (retried === 0) {
            console.log(`backfill ${id}: no tick failed or was cancelled, nothing to retry`);
            return;
          }
          const info = await client.getBackfill(id);
          console.log(`backfill ${id}: ${retried} failed or cancelled tick(s) rerun, at most ${maxConcurrentRuns} at a time`);
          await followBackfill(client, info);
        });
        return;
      }
      if (id !== undefined)
        throw new AxUsageError(`ax backfill ${flow}: unexpected argument "${id}"; give the range as --from <date> --to <date>`);
      const flags = parseFlags(
        z.object({ from: dateFlag, to: dateFlag, maxConcurrent: positiveInt.optional(), yes: z.boolean().optional() }),
        raw,
        "backfill",
      );
      await withClient(async (client) => {
        const started = await client.backfill(flow, {
          from: flags.from,
          to: flags.to,
          maxConcurrentRuns: flags.maxConcurrent,
          maxTicks: flags.yes ? Number.MAX_SAFE_INTEGER : CONFIRM_TICKS,
        });
        const info = await client.getBackfill(started.backfillId);
        const capped =
          started.maxConcurrentRuns < info.maxConcurrentRuns
            ? ` (the flow's maxConcurrentRuns; the backfill's own cap is ${info.maxConcurrentRuns})`
            : "";
        console.log(
          `backfill ${started.backfillId}: ${started.ticks} tick(s) of ${flow}, ${started.created} new run(s), at most ${started.maxConcurrentRuns} at a time${capped}`,
        );
        await followBackfill(client, info);
      });
    });

  program
    .command("backfills")
    .description("list backfills, newest first, with progress")
    .option("--limit <n>", "how many", "20")
    .action(async (raw: Record<string, unknown>) => {
      const flags = parseFlags(z.object({ limit: positiveInt }), raw, "backfills");
      await withClient(async (client) => {
        const backfills = await client.listBackfills({ limit: flags.limit });
        if (backfills.length === 0) console.log("no backfills; start one with `ax backfill <flow> --from <date> --to <date>`");
        for (const b of backfills) {
          console.log(
            [
              b.id,
              b.flow,
              b.status.padEnd(9),
              `${b.done}/${b.ticks} done`,
              `${b.failed} failed`,
              // Cancelled runs count as done: without their number a cancelled backfill looks complete.
              `${b.cancelled} cancelled`,
              ...(b.pruned > 0 ? [`${b.pruned} pruned`] : []),
              `${b.running} running`,
              `${b.from} -> ${b.to}`,
            ].join("  "),
          );
        }
      });
    });
}

/** How often the progress line is printed again when stdout is not a terminal. */
const NOT_TTY_LINE_MS = 10_000;

/**
 * A live progress bar until every tick's run ended. Ctrl-C stops watching only: the backfill
 * lives in PostgreSQL and the coordinators keep releasing its runs.
 */
async function followBackfill(client: RunsApi, first: BackfillInfo): Promise<void> {
  const { default: cliProgress } = await import("cli-progress");
  const bar = new cliProgress.SingleBar(
    {
      format: "backfill [{bar}] {value}/{total} done | {failed} failed | {running} running | ETA {remaining}{stalled}",
      stream: process.stdout,
      noTTYOutput: true,
      // Not a terminal (a CI log, a pipe): a line every 10 s, not one per poll.
      notTTYSchedule: NOT_TTY_LINE_MS,
    },
    cliProgress.Presets.shades_classic,
  );
  const eta = new Eta(first.done);
  const stall = new Stall(STALLED_MS);
  bar.start(first.ticks, first.done, {
    failed: first.failed,
    running: first.running,
    remaining: eta.text(first.done, first.ticks),
    stalled: stall.text(first),
  });
  let stopped = false;
  const stopWatching = () => {
    stopped = true;
  };
  process.once("SIGINT", stopWatching);
  let info = first;
  try {
    while (!stopped && info.status === "active" && info.done < info.ticks) {
      await sleep(POLL_MS);
      info = await client.getBackfill(first.id);
      bar.update(info.done, {
        failed: info.failed,
        running: info.running,
        remaining: eta.text(info.done, info.ticks),
        stalled: stall.text(info),
      });
    }
  } finally {
    process.off("SIGINT", stopWatching);
    bar.stop();
  }
  if (stopped) {
    console.log(
      `stopped watching; backfill ${first.id} keeps running (ax backfills to follow it, ax backfill cancel ${first.id} to cancel it)`,
    );
    return;
  }
  console.log(
    `backfill ${first.id} ${info.status === "cancelled" ? "cancelled" : "finished"}: ${info.succeeded} succeeded, ${info.failed} failed, ${info.cancelled} cancelled`,
  );
  if (info.failed > 0 || info.status === "cancelled") process.exitCode = 1;
}
