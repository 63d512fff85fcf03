import type { Logger } from "pino";
import { deliverAlert, newAlert, type AlertGroup, type AlertSink, type DeliveryResult } from "@ax/coordinator";
import { z } from "zod";
import { AxAlertGroupNotFoundError } from "@ax/common";
import { durationMs, timerMs } from "../duration.js";
import type { RuntimeConfig } from "./runtime-config.js";

const webhookSinkSchema = z
  .object({
    type: z.literal("webhook"),
    url: z.url({ protocol: /^https?$/, error: "must be an http or https URL, e.g. https://hooks.example.com/ax" }),
    /** The HMAC key as written (it is stored with the config version; prefer `secretEnv`). */
    secret: z.string().min(1).optional(),
    /** Name of an environment variable holding the HMAC key, read by the process that sends. */
    secretEnv: z.string().min(1).optional(),
    timeout: timerMs.default(5000),
    retries: z.number().int().min(0).max(10).default(3),
    retryBackoff: durationMs.default(1000),
    headers: z.record(z.string(), z.string()).optional(),
  })
  .strict();

const logSinkSchema = z.object({ type: z.literal("log"), level: z.enum(["info", "warn", "error"]).default("error") }).strict();

export const alertGroupSchema = z
  .object({
    sinks: z.array(z.discriminatedUnion("type", [webhookSinkSchema, logSinkSchema])).min(1),
    silence: durationMs.default(30 * 60_000),
    triggers: z
      .object({
        terminalFailure: z.boolean().default(true),
        consecutiveFailures: z.number().int().min(2).optional(),
        slowRun: durationMs.optional(),
        stuckRunning: durationMs.optional(),
        recovery: z.boolean().default(true),
      })
      .strict()
      .prefault({}),
    flows: z.array(z.string().min(1)).optional(),
  })
  .strict()
  .superRefine((group, ctx) => {
    group.sinks.forEach((sink, i) => {
      if (sink.type === "webhook" && sink.secret && sink.secretEnv) {
        ctx.addIssue({ code: "custom", path: ["sinks", i, "secretEnv"], message: "give secret or secret_env, not both" });
      }
    });
  });

export const alertsSchema = z.record(z.string().min(1), alertGroupSchema);

export type AlertsConfig = z.output<typeof alertsSchema>;

/**
 * The groups as the evaluator uses them: `secret_env` read from this process's environment now
 * (a sink whose variable is unset fails each delivery with AxAlertSecretUnsetError).
 */
export function resolveAlertGroups(config: AlertsConfig, env: NodeJS.ProcessEnv = process.env): Record<string, AlertGroup> {
  return Object.fromEntries(
    Object.entries(config).map(([name, group]) => [
      name,
      {
        sinks: group.sinks.map(
          (sink): AlertSink =>
            sink.type === "log"
              ? sink
              : {
                  type: "webhook",
                  url: sink.url,
                  secret: sink.secret ?? (sink.secretEnv ? env[sink.secretEnv] : undefined),
                  unsetSecretEnv: sink.secretEnv && !env[sink.secretEnv] ? sink.secretEnv : undefined,
                  timeoutMs: sink.timeout,
                  retries: sink.retries,
                  retryBackoffMs: sink.retryBackoff,
                  headers: sink.headers,
                },
        ),
        silenceMs: group.silence,
        triggers: {
          terminalFailure: group.triggers.terminalFailure,
          consecutiveFailures: group.triggers.consecutiveFailures,
          slowRunMs: group.triggers.slowRun,
          stuckRunningMs: group.triggers.stuckRunning,
          recovery: group.triggers.recovery,
        },
        flows: group.flows,
      },
    ]),
  );
}

/**
 * Sends a `test` alert through every sink of `group` (`ax alerts test`), bypassing triggers and
 * silence windows; answers each sink's outcome.
 */
export async function sendTestAlert(config: RuntimeConfig, group: string, log: Logger): Promise<DeliveryResult[]> {
  const groups = resolveAlertGroups(config.alerts);
  const found = groups[group];
  if (!found) throw new AxAlertGroupNotFoundError(group, Object.keys(groups));
  const alert = newAlert({ kind: "test", group, summary: `test alert of group ${group} (ax alerts test)`, flow: "", details: {} });
  // Each sink's result is the caller's to show (`ax alerts test` prints one line per sink).
  return deliverAlert(alert, found.sinks, log, { resultsShown: true });
}
