/**
 * Payment -> invoice -> notification end to end: start a runtime, trigger one "payment
 * succeeded" event, wait for the run and print its DAG with each node's state. Needs Redis
 * (REDIS_URL, keys under AX_PREFIX, default `ax`); PostgreSQL is optional (DATABASE_URL), without
 * it the history lives in embedded PGlite under ./.ax/data. The web console is served while it
 * runs (AX_PORT, default 8080); `--console` keeps it open after the run until Ctrl-C.
 */
import { fileURLToPath } from "node:url";
import { Runtime } from "ax-scheduler";
import { renderRun } from "@ax/cli/render";
import { flows } from "./flows/order-flow.js";
import { invoiceApi } from "./services/invoice-api.js";
import { notifier } from "./services/notifier.js";

const runtime = new Runtime({
  storage: process.env.DATABASE_URL,
  dataDir: fileURLToPath(new URL(".ax/data", import.meta.url)),
  redis: process.env.REDIS_URL,
  prefix: process.env.AX_PREFIX,
  flows,
  config: fileURLToPath(new URL("config/runtime.yaml", import.meta.url)),
  roles: ["coordinator", "worker", "api"],
  port: Number(process.env.AX_PORT ?? 8080),
  // A demo on the developer's own machine, on 127.0.0.1, like `ax dev`: no token to create first.
  insecureNoAuth: true,
  logLevel: process.env.AX_LOG_LEVEL ?? "warn",
});

await runtime.start();
const client = runtime.client();
try {
  // The invoice service is flaky at first: ax retries create_invoice (retryOn InvoiceApiError).
  invoiceApi.failNext(1);
  const paymentId = `pay_${Date.now()}`;
  const runId = await client.triggerFlow(
    "order_payment_flow",
    { payment_id: paymentId, user_id: "user_001", amount: 99.0 },
    { businessKey: "order-123" },
  );
  console.log(`watch it in the console: ${runtime.url}/runs/${runId}`);
  const run = await client.waitForRun(runId, { timeout: "60s" });
  console.log(renderRun(run));
  console.log(`\nnotifications sent: ${JSON.stringify(notifier.sent)}`);
  const where =
    (process.env.DATABASE_URL ? "" : ` --data-dir ${fileURLToPath(new URL(".ax/data", import.meta.url))}`) +
    (process.env.AX_PREFIX ? ` --prefix ${process.env.AX_PREFIX}` : "");
  console.log(`inspect it again (after this process exits) with: npx -y pnpm@9.15.9 ax run ${runId}${where}`);
  process.exitCode = run.status === "success" ? 0 : 1;
  if (process.argv.includes("--console")) {
    console.log(`the console stays open at ${runtime.url} until Ctrl-C`);
    await new Promise((resolve) => process.once("SIGINT", resolve));
  }
} finally {
  await client.close();
  await runtime.stop();
}
