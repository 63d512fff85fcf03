import { readFile } from "node:fs/promises";
import { text as readStream } from "node:stream/consumers";
import type { Command } from "commander";
import { z } from "zod";
import { MAX_PRIORITY, parseDuration, RUN_STATUSES, RUN_TRIGGERS, runStatusList } from "@ax/common";
import { AxUsageError } from "./errors.js";
import { loadFlows } from "./load-entry.js";
import { dateFlag, durationFlag, durationFlagAtLeast, jsonFlag, parseFlags, positiveInt, refuseTimeoutWithoutWait } from "./options.js";
import { printRunOrWait, renderRun } from "./render-run.js";
import { table } from "./render-queues.js";
import { withClient } from "./shared.js";

/** `ax trigger`, `ax run <id>`, `ax cancel <id>`, `ax runs`: through `withClient`, so they also reach an `ax dev`'s embedded history. */
export function addRunCommands(program: Command): void {
  program
    .command("trigger <flow>")
    .description("start a run of a flow")
    .option("--payload <json>", "the run's input, as JSON (default null)")
    .option("--payload-file <file>", "read the run's input from this JSON file, `-` for stdin (a payload too long for a command line)")
    .option("--idempotency-key <key>", "a second trigger with this key returns the first run")
    .option("--business-key <key>", "searchable business id (order id, batch id)")
    .option("--entry <file>", "the flows' code, so that the flow's own idempotencyKey/businessKey functions apply")
    .option("--delay <duration>", "start the run's first nodes this long from now")
    .option("--priority <n>", "BullMQ priority of every job of the run, 1 served first")
    .option("--wait", "wait for the run to finish and print it")
    .option("--timeout <duration>", "how long --wait waits", "60s")
    .action(async (flow: string, raw: Record<string, unknown>, command: Command) => {
      refuseTimeoutWithoutWait(command, "trigger");
      const flags = parseFlags(
        z.object({
          payload: jsonFlag.optional(),
          payloadFile: z.string().min(1).optional(),
          idempotencyKey: z.string().min(1).optional(),
          businessKey: z.string().min(1).optional(),
          entry: z.string().min(1).optional(),
          delay: durationFlag.optional(),
          // BullMQ's range: refused here naming the flag, as any other bad flag value.
          priority: positiveInt
            .max(MAX_PRIORITY, { error: `expected a whole number from 1 to ${MAX_PRIORITY} (BullMQ's range)` })
            .optional(),
          wait: z.boolean().optional(),
          timeout: durationFlagAtLeast(1, "1ms"),
        }),
        raw,
        "trigger",
      );
      const payload = flags.payloadFile === undefined ? (flags.payload ?? null) : await payloadFromFile(flags.payloadFile, flags.payload);
      const flows = flags.entry ? await loadFlows(flags.entry) : undefined;
      await withClient(
        program,
        async (client) => {
          const runId = await client.triggerFlow(flow, payload, {
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
    .option("--flow <name>", "only runs of this flow")
    .option("--status <status>", `only runs in this state, or these comma-separated: ${RUN_STATUSES.join(", ")}`)
    .option("--business-key <key>", "only runs with this business key (the whole key, as stored)")
    .option("--idempotency-key <key>", "the run this key made (with --flow: keys are unique per flow)")
    .option("--trigger <kind>", `how the runs were started: ${RUN_TRIGGERS.join(", ")}`)
    .option(
      "--from <date>",
      "runs created at or after: 2026-01-01 (midnight UTC) or a date-time with its offset, 2026-01-01T02:00:00+01:00",
    )
    .option("--to <date>", "runs created before (same forms as --from)")
    .option("--since <duration>", "runs created in the last <duration>: 30m, 2h, 7d (instead of --from)")
    .option("--limit <n>", "how many", "20")
    .option("--json", "print them as JSON (what client.listRuns answers), [] when none match")
    .action(async ({ json, ...raw }: Record<string, string | boolean | undefined>) => {
      const filter = parseFlags(
        z
          .object({
            flow: z.string().optional(),
            status: z
              .string()
              .refine((text) => runStatusList(text) !== undefined, `must be one of ${RUN_STATUSES.join(", ")}, or several comma-separated`)
              .transform((text) => runStatusList(text) ?? [])
              .optional(),
            businessKey: z.string().optional(),
            idempotencyKey: z.string().optional(),
            trigger: z.enum(RUN_TRIGGERS).optional(),
            from: dateFlag.optional(),
            to: dateFlag.optional(),
            since: durationFlag.optional(),
            limit: positiveInt,
          })
          .refine((f) => f.idempotencyKey === undefined || f.flow !== undefined, {
            path: ["idempotencyKey"],
            message: "needs --flow too: an idempotency key is unique per flow",
          })
          .refine((f) => f.since === undefined || f.from === undefined, {
            message: "--since and --from both say where the runs start: give one of them",
          })
          .refine((f) => f.from === undefined || f.to === undefined || f.from <= f.to, {
            path: ["from"],
            message: "is after --to: swap them",
          })
          .transform(({ since, ...f }) =>
            since === undefined ? f : { ...f, from: new Date(Date.now() - parseDuration(since)).toISOString() },
          ),
        raw,
        "runs",
      );
      await withClient(program, async (client) => {
        const runs = await client.listRuns(filter);
        if (json) {
          console.log(JSON.stringify(runs, null, 2));
          return;
        }
        if (runs.length === 0) {
          // On stderr, so that a script reading the table gets nothing.
          const { limit: _limit, ...narrowing } = filter;
          console.error(Object.values(narrowing).some((v) => v !== undefined) ? "no runs match" : "no runs yet");
          return;
        }
        console.log(
          table(
            // The version tells old runs from new during a deploy or a rollback.
            ["ID", "FLOW", "VERSION", "STATUS", "TRIGGER", "CREATED", "BUSINESS KEY"],
            runs.map((run) => [run.id, run.flow, `v${run.flowVersion}`, run.status, run.trigger, run.createdAt, run.businessKey ?? ""]),
          ),
        );
      });
    });
}

/** `--payload-file`: the JSON in a file, or on stdin for `-`. */
async function payloadFromFile(file: string, given: unknown): Promise<unknown> {
  if (given !== undefined) throw new AxUsageError("ax trigger: give --payload or --payload-file, not both");
  let text: string;
  try {
    text = file === "-" ? await readStream(process.stdin) : await readFile(file, "utf8");
  } catch (error) {
    throw new AxUsageError(`ax trigger: --payload-file ${file}: ${(error as Error).message}`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new AxUsageError(`ax trigger: --payload-file ${file} is not JSON (${(error as Error).message})`);
  }
}
