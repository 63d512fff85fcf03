import { describe, expect, it } from "vitest";
import { redactUrl } from "@ax/common";
import { redactConfigParsed, redactConfigYaml } from "./config-redaction.js";

/** Every style a secret can be written in; each LEAK value must vanish from the shown text. */
const STYLES = [
  "alerts:",
  "  ops:",
  "    sinks:",
  '      - { type: webhook, url: "https://hooks.example.com/T00/LEAK01", secret: "LEAK02", headers: { X-Team: LEAK03, Authorization: "Bearer LEAK04" } }',
  "      - type: webhook",
  "        url: https://user:LEAK05@other.example.com/ax?token=LEAK06",
  "        secret_env: OPS_SECRET # LEAK07 in a comment",
  "        secret: |",
  "          LEAK08",
  "        headers: &h",
  "          X-Custom: x#LEAK09",
  '          "X Sig": LEAK10',
  "      - type: webhook",
  "        url: https://third.example.com",
  "        headers: *h",
  '        "token": LEAK11',
  "        ? api_key",
  "        : LEAK12",
  "      - type: webhook",
  "        url: https://fourth.example.com",
  "        headers: {",
  "          X-Signature: LEAK13",
  "        }",
  "        password: abc,LEAK14",
  "tasks:",
  "  create_invoice: { retries: 3, timeout: 30s }",
  "  send_password_reset: { retries: 2 }",
  "pools:",
  "  api_token_calls: 4",
].join("\n");

describe("config redaction", () => {
  it("masks inline secrets, header values and webhook URLs in every YAML style, and keeps the rest", () => {
    const shown = redactConfigYaml(STYLES);
    expect(shown).not.toMatch(/LEAK\d\d/);
    for (const kept of [
      "secret_env: OPS_SECRET",
      "https://third.example.com",
      "create_invoice: { retries: 3, timeout: 30s }",
      "send_password_reset: { retries: 2 }",
      "api_token_calls: 4",
      "type: webhook",
    ]) {
      expect(shown).toContain(kept);
    }
  });

  it("keeps a URL's scheme and host only", () => {
    expect(redactUrl("https://ops.example.com")).toBe("https://ops.example.com");
    expect(redactUrl("https://hooks.slack.com/services/T0/B0/XYZ")).toBe("https://hooks.slack.com/[redacted]");
    expect(redactUrl("https://u:p@h.example.com:8443/x?y=1")).toBe("https://[redacted]@h.example.com:8443/[redacted]");
    expect(redactUrl("not a url")).toBe("[redacted]");
  });

  it("masks the parsed form the same way", () => {
    const parsed = {
      alerts: {
        ops: { sinks: [{ type: "webhook", url: "https://h.example.com/x", secret: "s", secretEnv: "E", headers: { "X-A": "v" } }] },
      },
      tasks: { send_password_reset: { retries: 2 } },
      pools: { api_token_calls: 4 },
    };
    expect(redactConfigParsed(parsed)).toEqual({
      alerts: {
        ops: {
          sinks: [
            {
              type: "webhook",
              url: "https://h.example.com/[redacted]",
              secret: "[redacted]",
              secretEnv: "E",
              headers: { "X-A": "[redacted]" },
            },
          ],
        },
      },
      tasks: { send_password_reset: { retries: 2 } },
      pools: { api_token_calls: 4 },
    });
  });
});
