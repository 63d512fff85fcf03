import { describe, expect, it } from "vitest";
import { errorFingerprint } from "./fingerprint.js";

const key = (message: string) => errorFingerprint({ name: "LedgerError", message });

describe("errorFingerprint", () => {
  it("gives one problem one key whatever ids and numbers its message holds", () => {
    const same: [string, string][] = [
      ["balance mismatch on acc_42: 103.50 != 99", "balance mismatch on acc_7: 12.00 != 13"],
      ["user u11 not found", "user u12 not found"],
      ["user u5 not found", "user u7 not found"],
      ["user u5 not found", "user u11 not found"],
      ["job job_7f3a2b failed", "job job_9c1d00 failed"],
      ["order ORD-ab12cd rejected", "order ORD-ef34gh rejected"],
      ["customer cus_NffrFeUfNV2Hib blocked", "customer cus_OaBcDeFgHiJkLm blocked"],
      ["order 5f0c2a1e-9b7d-4c3e-8a21-0d4f6b7c8e90 failed (0xdeadbeef)", "order 0b5c1f5e-4a43-4a52-9d1e-3d2b1a0c9f11 failed (0x1f)"],
      ["took 1.5s, limit 2s", "took 3.25s, limit 2s"],
      ["token a1b2c3d4e5f6 expired", "token 9f8e7d6c5b4a expired"],
    ];
    for (const [a, b] of same) expect(key(a), `${a} / ${b}`).toBe(key(b));
    expect(errorFingerprint({ name: "InvoiceApiError", message: "503" })).toBe("InvoiceApiError: <n>");
  });

  it("keeps different problems apart, names ending in digits included", () => {
    const apart: [string, string][] = [
      ["balance mismatch on acc_42", "ledger locked on acc_42"],
      ["IPv4 address required", "IPv6 address required"],
      ["sha1 checksum mismatch", "sha256 checksum mismatch"],
      ["replica db1 unreachable", "replica db2 unreachable"],
      ["utf8 decoding failed", "utf16 decoding failed"],
      ["send_notification failed", "send_invoice failed"],
    ];
    for (const [a, b] of apart) expect(key(a), `${a} / ${b}`).not.toBe(key(b));
  });
});
