import { describe, expect, it } from "vitest";
import { redactConfigText, redactConfigVersion } from "./config-redaction.js";

const YAML = [
  "alerts:",
  "  ops:",
  "    sinks:",
  '      - { type: webhook, url: "https://hooks.example.com/x", secret: "s3cr3t", headers: { X-Team: payments, Authorization: "Bearer abc" } }',
  "      - type: webhook",
  "        url: https://other.example.com",
  "        secret_env: OPS_SECRET",
  "        token: plain-token # a comment",
  "        headers:",
  "          X-Custom: not-obviously-secret",
  "          Authorization: Bearer xyz",
  "        timeout: 5s",
  "tasks:",
  "  create_invoice: { retries: 3 }",
].join("\n");

describe("config redaction", () => {
  it("masks inline secrets and every header value, in block and flow style, and leaves the rest", () => {
    const out = redactConfigText(YAML);
    for (const secret of ["s3cr3t", "Bearer abc", "payments", "plain-token", "not-obviously-secret", "Bearer xyz"]) {
      expect(out).not.toContain(secret);
    }
    for (const kept of [
      "https://hooks.example.com/x",
      "secret_env: OPS_SECRET",
      "timeout: 5s",
      "create_invoice: { retries: 3 }",
      "# a comment",
    ]) {
      expect(out).toContain(kept);
    }
    expect(out.split("\n")).toHaveLength(YAML.split("\n").length);
  });

  it("masks a diff's added and removed lines the same way, and the parsed form", () => {
    const diff = [
      "--- v1",
      "+++ v2",
      '-      - { type: webhook, url: "https://h", secret: "old" }',
      '+      - { type: webhook, url: "https://h", secret: "new" }',
    ].join("\n");
    const version = redactConfigVersion({
      version: 2,
      yaml: YAML,
      diff,
      parsed: {
        alerts: { ops: { sinks: [{ type: "webhook", secret: "s3cr3t", secretEnv: "OPS_SECRET", headers: { "X-Team": "payments" } }] } },
      },
    });
    expect(version.diff).not.toMatch(/old|new/);
    expect(version.diff).toContain("--- v1");
    expect(JSON.stringify(version.parsed)).toBe(
      '{"alerts":{"ops":{"sinks":[{"type":"webhook","secret":"[redacted]","secretEnv":"OPS_SECRET","headers":{"X-Team":"[redacted]"}}]}}}',
    );
  });
});
