import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Client, Runtime } from "ax-scheduler";
import { isolate } from "../../test/helpers/isolated.js";
import { testRuntime } from "../../test/helpers/runtime.js";
import { flows } from "./flows/order-flow.js";
import { invoiceApi } from "./services/invoice-api.js";
import { notifier } from "./services/notifier.js";

const axBin = fileURLToPath(new URL("../../packages/cli/bin/ax.js", import.meta.url));

describe("the order-payment example", () => {
  const env = isolate("example");
  let runtime: Runtime;
  let client: Client;

  beforeAll(async () => {
    runtime = testRuntime(env, { flows, config: fileURLToPath(new URL("config/runtime.yaml", import.meta.url)) });
    await runtime.start();
    client = runtime.client();
  });

  afterAll(async () => {
    await runtime?.stop();
    await env.cleanup();
  });

  it("runs parse_payment -> create_invoice -> send_notification(payment, invoice)", async () => {
    const event = { payment_id: "pay_001", user_id: "user_001", amount: 99.0 };
    const runId = await client.triggerFlow("order_payment_flow", event, { businessKey: "order-123" });
    const run = await client.waitForRun(runId, { timeout: "30s" });

    expect(run.status).toBe("success");
    expect(run.idempotencyKey).toBe("pay_001");
    expect(run.businessKey).toBe("order-123");
    expect(run.tasks.map((t) => [t.key, t.status])).toEqual([
      ["parse_payment", "success"],
      ["create_invoice", "success"],
      ["send_notification", "success"],
    ]);
    const [payment, invoice] = run.tasks.map((t) => t.result) as [Record<string, unknown>, Record<string, unknown>];
    expect(payment).toEqual({ ...event, parsed: true });
    expect(invoice.payment_id).toBe(event.payment_id);
    expect(invoice.invoice_id).toMatch(/^inv_/);
    expect(notifier.sent).toContainEqual({ user_id: "user_001", template: "invoice_issued", data: { invoice_id: invoice.invoice_id } });

    const { stdout } = await promisify(execFile)(process.execPath, [axBin, "run", runId, "--storage", env.storage], {
      env: { ...process.env, NO_COLOR: "1" },
    });
    expect(stdout).toContain("order_payment_flow");
    expect(stdout).toMatch(/create_invoice\s+success/);
    expect(stdout).toMatch(/send_notification\s+success.*<- parse_payment, create_invoice/);
  });

  it("retries create_invoice on InvoiceApiError, as runtime.yaml says", async () => {
    invoiceApi.failNext(2);
    const runId = await client.triggerFlow("order_payment_flow", { payment_id: "pay_002", user_id: "u2", amount: 5 });
    const run = await client.waitForRun(runId, { timeout: "30s" });
    const invoice = run.tasks.find((t) => t.key === "create_invoice")!;
    expect(run.status).toBe("success");
    expect(invoice.attempts.map((a) => a.outcome)).toEqual(["failed", "failed", "success"]);
    expect(invoice.attempts[0]!.error?.name).toBe("InvoiceApiError");
  });
});
