import type { Command } from "commander";
import { z } from "zod";
import type { AdminApi } from "./admin-api.js";
import { parseFlags, positiveInt } from "./options.js";

type WithAdmin = (fn: (api: AdminApi) => Promise<void>) => Promise<void>;

/** `ax audit`: the audit log, on the storage or through the API of the `ax dev` holding it. */
export function addAuditCommand(program: Command, withAdmin: WithAdmin): void {
  program
    .command("audit")
    .description(
      "the audit log, newest first: who triggered, cancelled, reran, applied config, paused schedules, managed tokens, from where",
    )
    .option("--limit <n>", "how many entries", "50")
    .option("--before <id>", "only entries older than this one (the last id of the previous page)")
    .option("--action <action>", "only this action (run.cancel), or a family of them (run: trigger, cancel, rerun)")
    .option("--actor <name>", "only this actor: a token's name, cli:<user>, anonymous")
    .option("--json", "print them as JSON")
    .action(async (raw: Record<string, unknown>) => {
      const flags = parseFlags(
        z.object({
          limit: positiveInt,
          before: positiveInt.optional(),
          action: z.string().min(1).optional(),
          actor: z.string().min(1).optional(),
          json: z.boolean().optional(),
        }),
        raw,
        "audit",
      );
      const { json: _json, ...filter } = flags;
      await withAdmin(async (client) => {
        const entries = await client.audit(filter);
        if (flags.json) {
          console.log(JSON.stringify(entries, null, 2));
          return;
        }
        if (entries.length === 0) {
          console.log(
            "no audit entries: the HTTP API's triggers, cancels, reruns, backfills, config applies, schedule pauses and flow retirements, and `ax token`, are recorded here",
          );
        }
        for (const e of entries) {
          console.log(
            [
              `#${e.id}`,
              e.at.toISOString(),
              e.actor.padEnd(16),
              e.action.padEnd(16),
              e.target ?? "-",
              e.ip ?? "-",
              e.detail ? JSON.stringify(e.detail) : "",
            ].join("  "),
          );
        }
      });
    });
}
