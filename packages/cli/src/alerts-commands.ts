import type { Command } from "commander";
import { z } from "zod";
import { MAX_ALERT_MUTE_MS, parseDuration } from "@ax/common";
import type { AlertMute, LoggedAlert } from "ax-scheduler";
import type { DeliveryResult } from "@ax/coordinator";
import type { AdminApi } from "./admin-api.js";
import type { ConfigApi } from "./config-commands.js";
import { durationFlagAtLeast, parseFlags, positiveInt } from "./options.js";

type WithConfig = (fn: (api: ConfigApi) => Promise<void>) => Promise<void>;
type WithAdmin = (fn: (api: AdminApi) => Promise<void>) => Promise<void>;

/** "flow order_payment_flow, task charge": what a mute covers within its group. */
function muteScope(m: AlertMute): string {
  return [m.flow ? `flow ${m.flow}` : "every flow", ...(m.task ? [`task ${m.task}`] : [])].join(", ");
}

/** What a mute covers and until when (or, once it is over, when it ended), on one line. */
function renderMute(m: AlertMute, now = Date.now()): string {
  const reason = m.reason ? `  "${m.reason}"` : "";
  const end = m.until.getTime() > now ? "until" : "ended";
  return `mute ${m.id}  group ${m.group} (${muteScope(m)})  ${end} ${m.until.toISOString()}  by ${m.createdBy}${reason}`;
}

/** One sent alert on one line: when, group, kind, its summary, and what each sink answered. */
export function renderSentAlert(a: LoggedAlert): string {
  const alert = a.alert as { summary?: unknown; suppressed?: unknown };
  const summary = typeof alert.summary === "string" ? alert.summary : `${a.flow}${a.runId ? ` run ${a.runId}` : ""}`;
  const suppressed = typeof alert.suppressed === "number" && alert.suppressed > 0 ? ` (+${alert.suppressed} held back)` : "";
  const deliveries = Array.isArray(a.deliveries) ? (a.deliveries as { sink: string; target: string; ok: boolean; error?: string }[]) : [];
  const sinks = deliveries.map((d) => (d.ok ? `${d.sink} ok` : `${d.sink} FAILED${d.error ? `: ${d.error}` : ""}`)).join(", ");
  return `#${a.id}  ${a.sentAt}  group ${a.group}  ${a.kind}  ${summary}${suppressed}  [${sinks || "no sink"}]`;
}

/**
 * `ax alerts test <group>`: one test alert through the group's sinks, to check URLs and secrets
 * before a real failure does; `ax alerts history`: what was sent; `ax alerts mute|mutes|unmute`: an
 * operator's mutes.
 */
export function addAlertsCommands(program: Command, withConfig: WithConfig, withAdmin: WithAdmin): void {
  const alerts = program.command("alerts").description("alert groups of runtime.yaml (alerts:)");

  alerts
    .command("test <group>")
    .description("send a test alert through every sink of the group (of the newest stored config version, or --config)")
    .option("--config <file>", "read the groups from this runtime.yaml instead of the stored version")
    .action(async (group: string, raw: { config?: string }) => {
      const [{ default: pino }, { parseRuntimeConfig, readConfigFile, sendTestAlert }] = await Promise.all([
        import("pino"),
        import("ax-scheduler"),
      ]);
      // The log sink writes here, on stdout, where the user is looking (through an `ax dev`, to its log).
      const log = pino({ level: "info" });
      const print = (results: DeliveryResult[]) => {
        for (const r of results) console.log(`${r.ok ? "sent  " : "FAILED"} ${r.sink} ${r.target}${r.error ? `: ${r.error}` : ""}`);
        if (results.some((r) => !r.ok)) process.exitCode = 1;
      };
      if (raw.config) {
        print(await sendTestAlert(parseRuntimeConfig(readConfigFile(raw.config), raw.config), group, log));
        return;
      }
      await withConfig(async (config) => print(await config.testAlert(group, log)));
    });

  alerts
    .command("mute <group>")
    .description("stop sending the group's alerts (of one flow, one task) cluster-wide for a while; audited")
    .requiredOption("--for <duration>", 'how long, e.g. "30m", "2h", "1d" (at most 30d)')
    .option("--flow <name>", "only this flow's alerts")
    .option("--task <name>", "only this task's alerts")
    .option("--reason <text>", "why, shown by ax alerts mutes")
    .action(async (group: string, raw: Record<string, unknown>) => {
      const flags = parseFlags(
        z.object({
          for: durationFlagAtLeast(1000, "1s").refine((value) => parseDuration(value) <= MAX_ALERT_MUTE_MS, {
            message: "must be at most 30d; to stop an alert for good, turn its trigger off under alerts: in runtime.yaml",
          }),
          flow: z.string().min(1).optional(),
          task: z.string().min(1).optional(),
          reason: z.string().max(500).optional(),
        }),
        raw,
        "alerts mute",
      );
      await withAdmin(async (client) => {
        const mute = await client.muteAlerts({ group, ...flags });
        console.log(renderMute(mute));
      });
    });

  alerts
    .command("mutes")
    .description("the mutes in force, ending soonest first")
    .option("--ended", "then those that ended in the last 30 days, latest first")
    .option("--json", "print as JSON")
    .action(async (raw: { ended?: boolean; json?: boolean }) => {
      await withAdmin(async (client) => {
        const mutes = await client.listAlertMutes({ ended: raw.ended === true });
        if (raw.json) console.log(JSON.stringify(mutes, null, 2));
        else if (mutes.length === 0) console.log(raw.ended ? "no mutes in the last 30 days" : "no mutes in force");
        else for (const m of mutes) console.log(renderMute(m));
      });
    });

  alerts
    .command("history")
    .description("the alerts sent, newest first, with what each sink answered")
    .option("--limit <n>", "at most this many (1 to 500)", "20")
    .option("--before <id>", "only alerts older than this one (the last id of the previous page)")
    .option("--json", "print as JSON")
    .action(async (raw: Record<string, unknown>) => {
      const flags = parseFlags(
        z.object({
          limit: positiveInt.max(500, { error: "must be at most 500" }),
          before: positiveInt.optional(),
          json: z.boolean().optional(),
        }),
        raw,
        "alerts history",
      );
      await withAdmin(async (client) => {
        const sent = await client.listAlerts({ limit: flags.limit, ...(flags.before === undefined ? {} : { before: flags.before }) });
        if (flags.json) console.log(JSON.stringify(sent, null, 2));
        else if (sent.length === 0) console.log(flags.before === undefined ? "no alerts sent" : `no alerts sent before #${flags.before}`);
        else {
          for (const a of sent) console.log(renderSentAlert(a));
          if (sent.length === flags.limit) console.log(`older: ax alerts history --before ${sent.at(-1)!.id}`);
        }
      });
    });

  alerts
    .command("unmute <id>")
    .description("end a mute now; its group's alerts are sent again from the next one")
    .action(async (id: string) => {
      const flags = parseFlags(z.object({ id: positiveInt }), { id }, "alerts unmute", { id: "<id>" });
      await withAdmin(async (client) => {
        const mute = await client.unmuteAlerts(flags.id);
        console.log(
          `mute ${mute.id} ended: alerts of group ${mute.group} (${muteScope(mute)}) are sent again, unless another mute covers them`,
        );
      });
    });
}
