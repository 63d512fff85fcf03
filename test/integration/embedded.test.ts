import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Runtime } from "ax-scheduler";
import { orderPaymentFlow } from "../../examples/order-payment/flows/order-flow.js";
import { isolate } from "../helpers/isolated.js";

describe("embedded mode: PGlite, no storage URL", () => {
  // Only the Redis prefix of `isolate()` is used; PostgreSQL is the embedded PGlite below.
  const env = isolate("embedded");
  const dataDir = mkdtempSync(join(tmpdir(), "ax-embedded-"));
  let runtime: Runtime;

  beforeAll(async () => {
    runtime = new Runtime({
      dataDir,
      redis: env.redis,
      prefix: env.prefix,
      flows: [orderPaymentFlow],
      roles: ["coordinator", "worker"],
      logLevel: process.env.AX_LOG_LEVEL ?? "warn",
      reconciler: { intervalMs: 500, staleMs: 1000, leaseMs: 3000 },
    });
    await runtime.start();
    // PGlite compiles its WebAssembly and migrates on start: slow on a busy machine.
  }, 90_000);

  afterAll(async () => {
    await runtime?.stop();
    await env.cleanup();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("runs the order-payment flow end to end with three successful nodes", async () => {
    const client = runtime.client();
    const event = { payment_id: `pay_${Date.now()}`, user_id: "user_embedded", amount: 12.5 };
    const run = await client.waitForRun(await client.triggerFlow("order_payment_flow", event), { timeout: "30s" });

    expect(run.status).toBe("success");
    expect(run.tasks.map((t) => [t.key, t.status])).toEqual([
      ["parse_payment", "success"],
      ["create_invoice", "success"],
      ["send_notification", "success"],
    ]);
    expect(run.tasks[0]!.result).toEqual({ ...event, parsed: true });
    expect(run.idempotencyKey).toBe(event.payment_id);
  });
});
