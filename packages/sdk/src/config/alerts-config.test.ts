import { describe, expect, it } from "vitest";
import { AxConfigError } from "@ax/common";
import { resolveAlertGroups } from "./alerts-config.js";
import { parseRuntimeConfig } from "./runtime-config.js";

const known = { tasks: ["create_invoice"], flows: ["order_payment_flow"] };

function refusal(text: string): AxConfigError {
  try {
    parseRuntimeConfig(text, "config/runtime.yaml", known);
  } catch (error) {
    expect(error).toBeInstanceOf(AxConfigError);
    return error as AxConfigError;
  }
  throw new Error("the config was accepted");
}

describe("alerts: in runtime.yaml", () => {
  it("reads groups with sinks, triggers and silence in ms, and defaults for what is left out", () => {
    const config = parseRuntimeConfig(
      [
        "alerts:",
        "  default:",
        "    sinks:",
        "      - { type: webhook, url: https://hooks.example.com/ax, secret_env: AX_HOOK_SECRET, timeout: 3s, retries: 1 }",
        "      - { type: log }",
        "    silence: 10m",
        "    triggers: { consecutive_failures: 3, slow_run: 1h, stuck_running: 2h }",
        "    flows: [order_payment_flow]",
      ].join("\n"),
      "config/runtime.yaml",
      known,
    );
    const groups = resolveAlertGroups(config.alerts, { AX_HOOK_SECRET: "k" });
    expect(groups.default).toEqual({
      sinks: [
        {
          type: "webhook",
          url: "https://hooks.example.com/ax",
          secret: "k",
          timeoutMs: 3000,
          retries: 1,
          retryBackoffMs: 1000,
          headers: undefined,
        },
        { type: "log", level: "error" },
      ],
      silenceMs: 600_000,
      triggers: { terminalFailure: true, consecutiveFailures: 3, slowRunMs: 3_600_000, stuckRunningMs: 7_200_000, recovery: true },
      flows: ["order_payment_flow"],
    });
  });

  it("refuses a bad sink, an unknown key and an unknown flow with file, line, column and key", () => {
    expect(refusal(["alerts:", "  ops:", "    sinks: [{ type: pager, to: me }]"].join("\n")).message).toMatch(
      /^config\/runtime\.yaml:3:\d+: alerts\.ops\.sinks\.0\.type: /,
    );
    expect(refusal(["alerts:", "  ops:", "    sinks: [{ type: log }]", "    mute: 5m"].join("\n")).message).toMatch(
      /^config\/runtime\.yaml:4:5: alerts\.ops\.mute: unknown key "mute" \(expected one of: sinks, silence, triggers, flows\)/,
    );
    expect(refusal(["alerts:", "  ops:", "    sinks: [{ type: log }]", "    silense: 5m"].join("\n")).message).toBe(
      "config/runtime.yaml:4:5: alerts.ops.silense: unknown key; did you mean silence?",
    );
    expect(refusal(["alerts:", "  ops:", "    sinks: [{ type: webhook, url: not-a-url }]"].join("\n")).message).toMatch(
      /^config\/runtime\.yaml:3:\d+: alerts\.ops\.sinks\.0\.url: /,
    );
    expect(refusal(["alerts:", "  ops:", "    sinks: [{ type: log }]", "    triggers: { slow_run: soon }"].join("\n")).message).toMatch(
      /^config\/runtime\.yaml:4:\d+: alerts\.ops\.triggers\.slow_run: "soon" is not a duration/,
    );
    expect(refusal(["alerts:", "  ops:", "    sinks: [{ type: log }]", "    flows: [order_flow]"].join("\n")).message).toMatch(
      /^config\/runtime\.yaml:4:\d+: alerts\.ops\.flows\.0: unknown flow "order_flow"/,
    );
    expect(refusal(["alerts:", "  ops:", "    sinks: []"].join("\n")).message).toMatch(/alerts\.ops\.sinks: /);
  });
});
