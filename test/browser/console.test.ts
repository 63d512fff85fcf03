import { existsSync, mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Runtime } from "ax-scheduler";
import { flows } from "../../examples/order-payment/flows/order-flow.js";
import { invoiceApi } from "../../examples/order-payment/services/invoice-api.js";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

/** Debian's chromium package (`.ci/run` installs it): no browser download at install time. */
const CHROMIUM = process.env.AX_CHROMIUM ?? "/usr/bin/chromium";
const ARTIFACTS = fileURLToPath(new URL("../artifacts/", import.meta.url));
const CONSOLE_DIST = fileURLToPath(new URL("../../packages/console/dist/index.html", import.meta.url));

describe("the web console in a real browser", () => {
  const env = isolate("console");
  let runtime: Runtime;
  let browser: Browser;
  let page: Page;

  const shot = (name: string) => page.screenshot({ path: `${ARTIFACTS}${name}.png`, fullPage: true });
  const runIdOf = () => new URL(page.url()).pathname.split("/")[2]!;

  beforeAll(async () => {
    if (!existsSync(CONSOLE_DIST))
      throw new Error("the console is not built: run `npx -y pnpm@9.15.9 --filter @ax/console build` (pnpm test does)");
    if (!existsSync(CHROMIUM))
      throw new Error(`no chromium at ${CHROMIUM}: apt-get install -y chromium (.ci/run does), or set AX_CHROMIUM`);
    mkdirSync(ARTIFACTS, { recursive: true });
    runtime = testRuntime(env, {
      flows,
      config: fileURLToPath(new URL("../../examples/order-payment/config/runtime.yaml", import.meta.url)),
      roles: ["coordinator", "worker", "api"],
      port: 0,
    });
    await runtime.start();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
    page = await browser.newPage({ viewport: { width: 1440, height: 900 }, locale: "en-US" });
  });

  afterAll(async () => {
    await browser?.close();
    await runtime?.stop();
    await env.cleanup();
  });

  async function trigger(payload: object): Promise<string> {
    await page.goto(`${runtime.url}/flows/order_payment_flow`);
    await page.getByRole("button", { name: "Trigger run" }).click();
    const editor = page.locator("textarea[name=payload]");
    await editor.fill("{ not json");
    await expect(page.getByRole("button", { name: "Start run" }).isDisabled()).resolves.toBe(true);
    await editor.fill(JSON.stringify(payload, null, 2));
    await page.getByRole("button", { name: "Start run" }).click();
    await page.waitForURL(/\/runs\/[0-9a-f-]{36}$/);
    return runIdOf();
  }

  const node = (key: string) => page.locator(`.dag-node[data-node="${key}"]`);
  const runBadge = () => page.locator("h1 .badge");

  it("triggers the order-payment example and watches its graph turn green", async () => {
    await page.goto(`${runtime.url}/`);
    await page.locator(".flow-card", { hasText: "order_payment_flow" }).waitFor();
    await shot("01-flows");

    const runId = await trigger({ payment_id: `pay_${Date.now()}`, user_id: "user_001", amount: 99 });
    for (const key of ["parse_payment", "create_invoice", "send_notification"]) {
      await node(key).and(page.locator('[data-status="success"]')).waitFor({ timeout: 30_000 });
    }
    await expect(runBadge().getAttribute("data-status")).resolves.toBe("success");
    await shot("02-run-success");
    expect((await runtime.client().getRun(runId)).status).toBe("success");

    await page.goto(`${runtime.url}/runs?flow=order_payment_flow`);
    await page.locator("table tbody tr", { hasText: runId.slice(0, 8) }).waitFor();
    await shot("03-runs");
  });

  it("shows a failed node's error and reruns from it", async () => {
    // The invoice service is down for every attempt (retries: 3), then recovers for the rerun.
    invoiceApi.failNext(4);
    const failedId = await trigger({ payment_id: `pay_fail_${Date.now()}`, user_id: "user_002", amount: 15 });
    await node("create_invoice").and(page.locator('[data-status="retrying"]')).waitFor({ timeout: 15_000 });
    await shot("04-run-retrying");
    await node("create_invoice").and(page.locator('[data-status="failed"]')).waitFor({ timeout: 30_000 });
    await expect(runBadge().getAttribute("data-status")).resolves.toBe("failed");
    await expect(node("send_notification").getAttribute("data-status")).resolves.toBe("skipped");

    await node("create_invoice").click();
    const panel = page.locator('[data-panel="create_invoice"]');
    await expect(panel.locator(".error-box").innerText()).resolves.toContain(
      "InvoiceApiError: invoice service unavailable (user user_002)",
    );
    await expect(panel.locator("tr[data-attempt]").count()).resolves.toBe(4);
    await expect(panel.getByText("No log lines.").or(panel.locator(".logs")).first().isVisible()).resolves.toBe(true);
    await shot("05-failed-node");

    await panel.getByRole("button", { name: "Rerun from this node" }).click();
    await page.waitForURL((url) => url.pathname.startsWith("/runs/") && !url.pathname.endsWith(failedId));
    for (const key of ["create_invoice", "send_notification"]) {
      await node(key).and(page.locator('[data-status="success"]')).waitFor({ timeout: 30_000 });
    }
    await expect(node("parse_payment").getAttribute("data-status")).resolves.toBe("reused");
    await shot("06-rerun-success");
    const rerun = await runtime.client().getRun(runIdOf());
    expect(rerun).toMatchObject({ status: "success", rerunOf: failedId, trigger: "rerun" });
  });

  it("shows a flow's schedule-less page, versions and recent runs, and the config in force with its history", async () => {
    await page.goto(`${runtime.url}/flows/order_payment_flow`);
    await page.getByRole("heading", { name: "Versions" }).waitFor();
    await page.locator(".strip .cell").first().waitFor();
    await shot("07-flow");
    await page.goto(`${runtime.url}/config`);
    await page.locator("td", { hasText: "retry_backoff" }).first().waitFor();
    await expect(page.locator("td", { hasText: "max_backoff" }).count()).resolves.toBe(0);
    await expect(page.locator(".pill", { hasText: "yaml v1" }).count()).resolves.toBeGreaterThan(0);
    await page.locator("pre.diff .add", { hasText: "max_concurrency: 10" }).waitFor();
    await shot("08-config");
  });

  it("switches to Chinese and shows the login screen on a 401", async () => {
    await page.goto(`${runtime.url}/workers`);
    await page.getByTestId("language").click();
    await page.getByRole("heading", { name: "工作进程与队列" }).waitFor();
    await page.locator("table tbody tr", { hasText: runtime.workerId }).waitFor();
    await shot("09-workers-zh");
    await page.getByTestId("language").click();

    await page.route("**/api/**", (route) =>
      route.fulfill({ status: 401, body: JSON.stringify({ error: "Unauthorized", message: "token" }) }),
    );
    await page.goto(`${runtime.url}/runs`);
    await page.getByRole("heading", { name: "Sign in to ax" }).waitFor();
    await page.locator("input[name=token]").fill("secret-token");
    await page.unroute("**/api/**");
    let sent: string | undefined;
    await page.route("**/api/runs*", async (route) => {
      sent = route.request().headers().authorization;
      await route.continue();
    });
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Runs" }).waitFor();
    await expect.poll(() => sent).toBe("Bearer secret-token");
    await shot("10-after-login");
  });
});
