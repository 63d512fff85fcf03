import { describe, expect, it } from "vitest";
import { errorFingerprint } from "./evaluator.js";

describe("errorFingerprint", () => {
  it("gives one problem one key whatever ids and numbers its message holds", () => {
    const key = (message: string) => errorFingerprint({ name: "LedgerError", message });
    expect(key("balance mismatch on acc_42: 103.50 != 99")).toBe(key("balance mismatch on acc_7: 12.00 != 13"));
    expect(key("user u11 not found")).toBe(key("user u12 not found"));
    expect(key("order 5f0c2a1e-9b7d-4c3e-8a21-0d4f6b7c8e90 failed (0xdeadbeef)")).toBe(
      key("order 0b5c1f5e-4a43-4a52-9d1e-3d2b1a0c9f11 failed (0x1f)"),
    );
    expect(key("balance mismatch on acc_42")).not.toBe(key("ledger locked on acc_42"));
    expect(errorFingerprint({ name: "InvoiceApiError", message: "503" })).toBe("InvoiceApiError: <n>");
  });
});
