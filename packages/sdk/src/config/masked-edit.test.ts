import { describe, expect, it } from "vitest";
import { redactConfigYaml } from "./config-redaction.js";
import { applyMaskedEdit } from "./masked-edit.js";

const STORED = [
  "# Billing's settings: ask #payments before raising retries.",
  "tasks:",
  "  create_invoice:",
  "    retries: 3 # the invoice API dedupes by order id",
  "    timeout: 30s",
  "  send_mail: { retries: 5 }",
  "alerts:",
  "  ops:",
  "    sinks:",
  "      # the on-call channel",
  "      - type: webhook",
  "        url: https://hooks.example.com/T00/SECRET-PATH",
  "        secret: SIGNING-KEY",
  "      - type: log",
  "",
].join("\n");

/** The text as the console's editor shows it, with `edit` made on it. */
const edited = (edit: (shown: string) => string) => edit(redactConfigYaml(STORED));

describe("an edit of a version's masked text", () => {
  it("is made on the stored text: its comments and the masked values left as shown stay", () => {
    const merged = applyMaskedEdit(
      STORED,
      edited((shown) => shown.replace("retries: 3", "retries: 4")),
    );
    expect(merged).toBe(STORED.replace("retries: 3 #", "retries: 4 #"));
  });

  it("answers the stored text itself when nothing but layout changed", () => {
    expect(
      applyMaskedEdit(
        STORED,
        edited((shown) => shown.replace(/^ {2}send_mail: \{ retries: 5 \}$/m, "  send_mail:\n    retries: 5")),
      ),
    ).toBe(STORED);
  });

  it("adds and removes keys, and keeps a list item the edit moved or left alone", () => {
    const merged = applyMaskedEdit(
      STORED,
      edited((shown) =>
        shown
          .replace("  send_mail: { retries: 5 }\n", "")
          .replace("    timeout: 30s\n", "    timeout: 1m\n    priority: 5\n")
          .replace(/( {6}- type: webhook\n(?: {8}.*\n)+)( {6}- type: log\n)/, "$2$1"),
      ),
    );
    expect(merged).toBeDefined();
    expect(merged).toContain("# Billing's settings");
    expect(merged).toContain("retries: 3 # the invoice API dedupes by order id");
    expect(merged).toContain("timeout: 1m\n    priority: 5\n");
    expect(merged).not.toContain("send_mail");
    expect(merged).toContain("url: https://hooks.example.com/T00/SECRET-PATH\n        secret: SIGNING-KEY");
    expect(merged!.indexOf("type: log")).toBeLessThan(merged!.indexOf("type: webhook"));
  });

  it("keeps a list item's masked values when another of its fields changed", () => {
    const merged = applyMaskedEdit(
      STORED,
      edited((shown) => shown.replace("- type: log", "- type: log\n        minSeverity: error")),
    );
    expect(merged).toContain("secret: SIGNING-KEY");
    const webhook = applyMaskedEdit(
      STORED,
      edited((shown) => shown.replace(/(- type: webhook\n)/, "$1        minSeverity: error\n")),
    );
    expect(webhook).toContain("url: https://hooks.example.com/T00/SECRET-PATH");
    expect(webhook).toContain("secret: SIGNING-KEY");
    expect(webhook).toContain("minSeverity: error");
  });

  it("stores a masked value the edit changed as written, so the check refuses the mask it still holds", () => {
    const merged = applyMaskedEdit(
      STORED,
      edited((shown) => shown.replace("hooks.example.com", "hooks.example.org")),
    );
    expect(merged).toContain("url: https://hooks.example.org/");
    expect(merged).toMatch(/url: \S*\[redacted\]/);
    expect(merged).toContain("secret: SIGNING-KEY");
  });

  it("adds the comments written in the edit where they were written, after the stored ones", () => {
    const merged = applyMaskedEdit(
      STORED,
      edited((shown) =>
        shown
          .replace("    timeout: 30s\n", "    # raised after the outage of 12-01\n    timeout: 30s # the API's own limit\n")
          .replace("retries: 3", "retries: 4 # one more since 12-01")
          .replace("  send_mail:", "  # mail goes through the relay\n  send_mail:")
          .replace("      - type: log\n", "      # for the worker's log\n      - type: log\n")
          .concat("# end of the file\n"),
      ),
    );
    expect(merged).toBe(
      STORED.replace(
        "retries: 3 # the invoice API dedupes by order id",
        "retries: 4 # the invoice API dedupes by order id; one more since 12-01",
      )
        .replace("    timeout: 30s\n", "    # raised after the outage of 12-01\n    timeout: 30s # the API's own limit\n")
        .replace("  send_mail:", "  # mail goes through the relay\n  send_mail:")
        .replace("      - type: log\n", "      # for the worker's log\n      - type: log\n")
        .concat("\n# end of the file\n"),
    );
  });

  it("stores an edit that only added a comment, and does not repeat a stored comment written again", () => {
    const merged = applyMaskedEdit(
      STORED,
      edited((shown) => shown.replace("tasks:\n", "tasks:\n  # the invoice API dedupes by order id\n")),
    );
    expect(merged).toBe(STORED.replace("tasks:\n", "tasks:\n  # the invoice API dedupes by order id\n"));
    expect(
      applyMaskedEdit(
        STORED,
        edited((shown) => shown.replace("retries: 3", "retries: 3 # the invoice API dedupes by order id")),
      ),
    ).toBe(STORED);
  });

  it("puts a new key or list item where the edit wrote it, and a stored comment stays with its own key or item", () => {
    const merged = applyMaskedEdit(
      STORED,
      edited((shown) =>
        shown
          .replace("tasks:\n", "tasks:\n  # reports run nightly\n  report: { retries: 1 }\n")
          .replace(
            "      - type: webhook",
            "      # first, before the webhook\n      - type: slack\n        channel: ops\n      - type: webhook",
          ),
      ),
    );
    expect(merged).toContain("tasks:\n  # reports run nightly\n  report: { retries: 1 }\n  create_invoice:");
    expect(merged).toContain(
      "    sinks:\n      # first, before the webhook\n      - type: slack\n        channel: ops\n      # the on-call channel\n      - type: webhook",
    );
  });

  it("takes an edit that uses anchors value by value", () => {
    const merged = applyMaskedEdit(
      STORED,
      edited((shown) => `${shown}defaults: &d { retries: 2 }\nother: *d\n`),
    );
    expect(merged).toContain("retries: 3 # the invoice API dedupes by order id");
    expect(merged).toContain("other:\n  retries: 2\n");
  });

  it("leaves a text with anchors or one that does not parse to be stored as written", () => {
    const anchored = "defaults: &d { retries: 3 }\ntasks:\n  a: *d\n";
    expect(applyMaskedEdit(anchored, "defaults: { retries: 4 }\n")).toBeUndefined();
    expect(applyMaskedEdit(STORED, "tasks: [\n")).toBeUndefined();
    expect(applyMaskedEdit("tasks: {\n", "tasks: {}\n")).toBeUndefined();
  });

  it("stores an edit that removed everything as written", () => {
    expect(applyMaskedEdit(STORED, "")).toBe("");
    expect(applyMaskedEdit(STORED, "# nothing for now\n")).toBe("# nothing for now\n");
  });

  it("takes the edit of an empty stored text as written", () => {
    expect(applyMaskedEdit("# to fill in\n", "tasks:\n  a: { retries: 1 }\n")).toBe("tasks:\n  a: { retries: 1 }\n");
  });
});
