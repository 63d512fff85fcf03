import { fileURLToPath } from "node:url";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, type Runtime } from "ax-scheduler";
import { flows } from "../../examples/order-payment/flows/order-flow.js";
import { invoiceApi } from "../../examples/order-payment/services/invoice-api.js";
import { isolate } from "../helpers/isolated.js";
import { launchChromium, requireConsoleAndBrowser, screenshot } from "./browser-env.js";
import { testRuntime } from "../helpers/runtime.js";

const oldStep = ax.task({ name: "console_old_step" }, (n: number) => n + 1);
const oldFlow = ax.flow({ name: "console_old_flow" }, (n) => {
  oldStep(n);
});

describe("the web console in a real browser", () => {
  const env = isolate("console");
  let runtime: Runtime;
  let browser: Browser;
  let page: Page;

  const shot = (name: string) => screenshot(page, name, { fullPage: true });
  const runIdOf = () => new URL(page.url()).pathname.split("/")[2]!;

  beforeAll(async () => {
    requireConsoleAndBrowser();
    runtime = testRuntime(env, {
      flows,
      config: fileURLToPath(new URL("../../examples/order-payment/config/runtime.yaml", import.meta.url)),
      roles: ["coordinator", "worker", "api"],
      port: 0,
    });
    await runtime.start();
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1440, height: 900 }, locale: "en-US" });
  });

  afterAll(async () => {
    await browser?.close();
    await runtime?.stop();
    await env.cleanup();
  });

  async function trigger(payload: object): Promise<string> {
    await page.goto(`${runtime.url}/flows/order_payment_flow`);
    const open = page.getByRole("button", { name: "Trigger run" });
    await open.click();
    const editor = page.locator("textarea[name=payload]");
    // The dialog opens to type the payload: the focus is there already.
    await expect.poll(() => page.evaluate(`document.activeElement?.name`)).toBe("payload");
    // Tab stays in the dialog (the page behind is inert); Escape closes it and gives the focus back.
    for (let i = 0; i < 6; i++) {
      await page.keyboard.press("Tab");
      const outside = await page.evaluate(`!!document.activeElement?.closest("main") && !document.activeElement?.closest("dialog")`);
      expect(outside, `Tab ${i + 1} left the dialog`).toBe(false);
    }
    await page.keyboard.press("Escape");
    await expect.poll(() => page.locator("dialog").count()).toBe(0);
    await expect.poll(() => page.evaluate(`document.activeElement?.textContent`)).toBe("Trigger run");
    await open.click();
    await expect.poll(() => page.evaluate(`document.activeElement?.name`)).toBe("payload");
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

    const payment = { payment_id: `pay_${Date.now()}`, user_id: "user_001", amount: 99 };
    const runId = await trigger(payment);
    for (const key of ["parse_payment", "create_invoice", "send_notification"]) {
      await node(key).and(page.locator('[data-status="success"]')).waitFor({ timeout: 30_000 });
    }
    await expect(runBadge().getAttribute("data-status")).resolves.toBe("success");
    // The header names its values.
    await expect(page.locator(".page-head [data-meta=trigger]").textContent()).resolves.toBe("trigger manual");
    await expect(page.locator(".page-head [data-meta=took]").textContent()).resolves.toMatch(/^took \d/);
    await shot("02-run-success");
    // A person pressed Start run: the run is labelled manual, as a Client's trigger is, not event.
    expect(await runtime.client().getRun(runId)).toMatchObject({ status: "success", trigger: "manual" });

    // On the flow's card, a run's cell opens that run (not the flow, as a link inside the card's link
    // did); anywhere else on the card opens the flow.
    await page.goto(`${runtime.url}/`);
    const card = page.locator(".flow-card", { hasText: "order_payment_flow" });
    await card.locator(`a[href="/runs/${runId}"]`).click();
    await runBadge().waitFor();
    expect(new URL(page.url()).pathname).toBe(`/runs/${runId}`);
    await page.goto(`${runtime.url}/`);
    await card.click({ position: { x: 6, y: 6 } });
    await page.getByRole("heading", { name: "order_payment_flow" }).waitFor();
    expect(new URL(page.url()).pathname).toBe("/flows/order_payment_flow");

    // The same payment again: its idempotency key has a run, so none starts, and the dialog says so
    // instead of opening the old run as if it were new.
    await page.getByRole("button", { name: "Trigger run" }).click();
    await page.locator("textarea[name=payload]").fill(JSON.stringify({ ...payment, amount: 999 }));
    await page.getByRole("button", { name: "Start run" }).click();
    const existing = page.getByRole("dialog").getByRole("status");
    await expect.poll(() => existing.textContent()).toContain("No new run: a run with this payload's idempotency key exists already");
    await shot("02b-trigger-existing");
    await existing.getByRole("link", { name: "Open that run" }).click();
    await runBadge().waitFor();
    expect(new URL(page.url()).pathname).toBe(`/runs/${runId}`);

    await page.goto(`${runtime.url}/runs?flow=order_payment_flow`);
    await page.locator("table tbody tr", { hasText: runId.slice(-8) }).waitFor();
    await shot("03-runs");

    // The business key filter applies as it is typed, once typing pauses, as the selects do: no Enter, no blur.
    await page.locator("input[name=businessKey]").pressSequentially("no-such-key", { delay: 20 });
    await page.waitForURL((url) => url.searchParams.get("businessKey") === "no-such-key");
    // The key is matched whole: the empty list says so, and which key found nothing.
    await page
      .getByText('No runs match these filters. The business key matches whole keys only: no run has the key "no-such-key".')
      .waitFor();
    await expect(page.getByRole("button", { name: "Clear filters" }).isVisible()).resolves.toBe(true);
    await expect(page.evaluate(`document.activeElement?.name`)).resolves.toBe("businessKey");
    await page.getByRole("button", { name: "Clear filters" }).click();
    await page.locator("table tbody tr", { hasText: runId.slice(-8) }).waitFor();
    await expect(page.locator("input[name=businessKey]").inputValue()).resolves.toBe("");
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
    // Near the top, why the run failed: the node that failed first and its error.
    const firstFailure = page.getByTestId("first-failure");
    await expect(firstFailure.textContent()).resolves.toBe(
      "Failed at create_invoice · InvoiceApiError: invoice service unavailable (user user_002)",
    );
    const nodeInUrl = () => new URL(page.url()).searchParams.get("node");

    // A skipped node says which upstream failure it was skipped for, not that it has no attempts "yet".
    await node("send_notification").click();
    // The open node is in the address, to be shared.
    await expect.poll(nodeInUrl).toBe("send_notification");
    const skipped = page.locator('[data-panel="send_notification"]');
    await expect(skipped.locator('[data-note="skipped"]').textContent()).resolves.toBe("Never ran: skipped because create_invoice failed.");
    await expect(skipped.getByText(/No attempts/).count()).resolves.toBe(0);

    // From the keyboard: Tab to the failed node (it has a name and a visible ring), Enter opens its panel.
    const focusable = (key: string) => page.locator(`.react-flow__node[data-id="${key}"]`);
    await expect(focusable("create_invoice").getAttribute("aria-label")).resolves.toBe("create_invoice: failed");
    await focusable("parse_payment").focus();
    await page.keyboard.press("Tab");
    await expect(page.evaluate(`document.activeElement?.dataset.id`)).resolves.toBe("create_invoice");
    await expect(
      page.evaluate(`getComputedStyle(document.querySelector('.dag-node[data-node="create_invoice"]')).outlineStyle`),
    ).resolves.toBe("solid");
    await page.keyboard.press("Enter");
    const panel = page.locator('[data-panel="create_invoice"]');
    await expect(panel.locator(".error-box").textContent()).resolves.toContain(
      "InvoiceApiError: invoice service unavailable (user user_002)",
    );
    await expect(panel.locator(".error-box .not-retried").textContent()).resolves.toBe("Not retried: no retries left (retries: 3)");
    await expect(panel.locator("tr[data-attempt]").count()).resolves.toBe(4);
    await expect.poll(nodeInUrl).toBe("create_invoice");
    // Closing the panel takes the node out of the address; the failure note opens it again.
    await panel.getByRole("button", { name: "Close" }).click();
    await expect.poll(nodeInUrl).toBeNull();
    await firstFailure.getByRole("button", { name: "create_invoice" }).click();
    await expect.poll(nodeInUrl).toBe("create_invoice");
    // Escape closes it too, as it closes a dialog.
    await page.keyboard.press("Escape");
    await expect.poll(nodeInUrl).toBeNull();
    await firstFailure.getByRole("button", { name: "create_invoice" }).click();
    await expect.poll(nodeInUrl).toBe("create_invoice");
    await panel.locator("tr[data-attempt]").first().waitFor();
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

    // A reused node points to the run its result came from, where its attempts and log lines are.
    await node("parse_payment").click();
    const reused = page.locator('[data-panel="parse_payment"] [data-note="reused"]');
    await expect(reused.textContent()).resolves.toBe(
      `Result carried over from run ${failedId.slice(-8)}. Its attempts and log lines are on that run.`,
    );
    await reused.getByRole("link").click();
    await page.waitForURL((url) => url.pathname === `/runs/${failedId}`);
    await expect.poll(() => page.locator('[data-panel="parse_payment"] tr[data-attempt]').count()).toBe(1);

    // Rerunning all repeats every effect, so it is asked first; the safe choice has the focus.
    const reruns = async () => (await runtime.client().listRuns({ flow: "order_payment_flow", limit: 100 })).length;
    const before = await reruns();
    await page.getByRole("button", { name: "Rerun all" }).click();
    const ask = page.getByRole("dialog", { name: "Rerun every task?" });
    await expect(ask.textContent()).resolves.toContain("A new run executes all 3 tasks again with this run's payload");
    await expect.poll(() => page.evaluate("document.activeElement?.textContent")).toBe("Don't rerun");
    await shot("06b-rerun-all-confirm");
    await page.keyboard.press("Enter");
    await expect.poll(() => page.locator("dialog").count()).toBe(0);
    expect(await reruns()).toBe(before);
    await page.getByRole("button", { name: "Rerun all" }).click();
    await ask.getByRole("button", { name: "Rerun all" }).click();
    await page.waitForURL((url) => url.pathname.startsWith("/runs/") && !url.pathname.endsWith(failedId));
    for (const key of ["parse_payment", "create_invoice", "send_notification"]) {
      await node(key).and(page.locator('[data-status="success"]')).waitFor({ timeout: 30_000 });
    }
    await expect.poll(async () => (await runtime.client().getRun(runIdOf())).status).toBe("success");
    expect(await runtime.client().getRun(runIdOf())).toMatchObject({ rerunOf: failedId, trigger: "rerun" });
  });

  /** A run as the API answers it, shown from a mocked stream: states a live cluster reaches only by chance. */
  async function showRun(run: object & { id: string }) {
    await page.route(`**/api/runs/${run.id}/stream`, (route) =>
      route.fulfill({ contentType: "text/event-stream", body: `data: ${JSON.stringify(run)}\n\nevent: end\ndata: {}\n\n` }),
    );
    await page.route(`**/api/runs/${run.id}/logs*`, (route) =>
      route.fulfill({ contentType: "application/json", body: JSON.stringify({ lines: [], truncated: [] }) }),
    );
    await page.goto(`${runtime.url}/runs/${run.id}`);
    await page.locator("h1 .badge").waitFor();
  }
  const ago = (s: number) => new Date(Date.now() - s * 1000).toISOString();
  const mockTask = (key: string, upstream: string[], status: string, extra: object = {}) => ({
    key,
    task: key,
    queue: "default",
    upstream,
    status,
    attempts: [],
    result: null,
    error: null,
    progress: null,
    nextRetryAt: null,
    startedAt: null,
    finishedAt: null,
    reusedFrom: null,
    waitingFor: null,
    ...extra,
  });
  const mockAttempt = (n: number, outcome: string | null) => ({
    n,
    worker: "host-1-abc",
    startedAt: ago(60 - n * 5),
    finishedAt: outcome ? ago(58 - n * 5) : null,
    outcome,
    error: outcome === "failed" ? { name: "InvoiceApiError", message: "invoice service unavailable", stack: null } : null,
    workerSilentMs: null as number | null,
  });
  const mockRun = (status: string, tasks: object[], extra: object = {}) => ({
    id: crypto.randomUUID(),
    flow: "order_payment_flow",
    flowVersion: 1,
    status,
    trigger: "event",
    payload: { payment_id: "p1" },
    businessKey: "order-12",
    idempotencyKey: null,
    logicalDate: null,
    rerunOf: null,
    priority: null,
    runAt: null,
    createdAt: ago(70),
    startedAt: ago(65),
    finishedAt: null,
    waitingFor: null,
    tasks,
    ...extra,
  });

  it("says a running run with a node failed for good will fail, and explains retries, held nodes and a skipped node's input", async () => {
    const run = mockRun("running", [
      mockTask("parse_payment", [], "success", { attempts: [mockAttempt(1, "success")], result: { ok: true } }),
      mockTask("create_invoice", ["parse_payment"], "failed", {
        attempts: [1, 2, 3, 4].map((n) => mockAttempt(n, "failed")),
        error: {
          name: "InvoiceApiError",
          message: "invoice service unavailable",
          stack: null,
          notRetried: "no retries left (retries: 3)",
          notifyOnly: false,
        },
        startedAt: ago(55),
        finishedAt: ago(30),
      }),
      mockTask("send_notification", ["create_invoice"], "skipped"),
      mockTask("charge_card", ["parse_payment"], "retrying", {
        attempts: [mockAttempt(1, "failed"), mockAttempt(2, "timed_out")],
        nextRetryAt: new Date(Date.now() + 30_000).toISOString(),
      }),
      mockTask("sync_stock", ["parse_payment"], "queued", { waitingFor: "pool core_db (25/25)" }),
    ]);
    await showRun(run);
    // Near the heading: the run still runs, but a node failed with no retry left.
    const note = page.getByTestId("first-failure");
    await expect(note.getAttribute("data-ongoing")).resolves.toBe("true");
    await expect(note.textContent()).resolves.toBe(
      "1 node failed with no retry left: create_invoice · InvoiceApiError: invoice service unavailable" +
        "This run will end failed once the rest finish.",
    );
    // The header's values are named.
    const meta = (name: string) => page.locator(`.page-head [data-meta="${name}"]`).textContent();
    await expect(meta("version")).resolves.toBe("version v1");
    await expect(meta("trigger")).resolves.toBe("trigger event");
    await expect(meta("key")).resolves.toBe("key order-12");
    await expect(meta("created")).resolves.toMatch(/^created \w{3},? \d{1,2} \w{3}/);
    await expect(meta("runningFor")).resolves.toMatch(/^running for \d/);
    await expect(page.getByRole("button", { name: "Cancel run" }).isVisible()).resolves.toBe(true);

    // A retrying node: when it retries and how many attempts it has had.
    await node("charge_card").click();
    const retry = page.locator('[data-panel="charge_card"] [data-testid="retry-in"]');
    await expect(retry.textContent()).resolves.toMatch(/^retry in \d+(\.\d)? s · 2 attempts so far$/);
    await shot("18a-retrying-node");

    // A node held by a pool: the pool is shared across flows, so the link lists every flow's running runs.
    await node("sync_stock").click();
    const held = page.locator('[data-panel="sync_stock"] [data-held-by] a');
    await expect(held.textContent()).resolves.toBe("running runs of all flows (a shared limit) →");
    await expect(held.getAttribute("href")).resolves.toBe("/runs?status=running");

    // A skipped node never got its input: no upstream null as if create_invoice had returned one.
    await node("send_notification").click();
    const input = page.locator('[data-panel="send_notification"] [data-input="not-run"]');
    await expect(input.textContent()).resolves.toBe("Not run: upstream create_invoice failed");
    await shot("18-running-with-failure");
    await page.getByTestId("language").click();
    await expect(note.textContent()).resolves.toContain("1 个节点已失败且不再重试：");
    await expect(input.textContent()).resolves.toBe("未运行：上游 create_invoice 失败");
    // The API's reasons in Chinese, the English it wrote in the tooltip.
    await node("create_invoice").click();
    const notRetried = page.locator('[data-panel="create_invoice"] .not-retried');
    await expect(notRetried.textContent()).resolves.toBe("未重试： 重试次数已用完（retries: 3）");
    await expect(notRetried.getAttribute("title")).resolves.toBe("no retries left (retries: 3)");
    await expect(node("sync_stock").locator(".dag-detail").textContent()).resolves.toBe("资源池 core_db（25/25）");
    await node("sync_stock").click();
    const waiting = page.locator('[data-panel="sync_stock"] [data-waiting]');
    await expect(waiting.textContent()).resolves.toBe("等待: 资源池 core_db（25/25）");
    await expect(waiting.getAttribute("title")).resolves.toBe("pool core_db (25/25)");
    await expect(held.textContent()).resolves.toBe("所有流程正在运行的运行（共享的限制）→");
    await shot("18b-running-with-failure-zh");
    await page.getByTestId("language").click();
  });

  it("links a run held by maxConcurrentRuns to its flow's unfinished runs (admitted ones may still be pending)", async () => {
    const waiting = "maxConcurrentRuns 3/3";
    const run = mockRun(
      "pending",
      [mockTask("parse_payment", [], "pending", { waitingFor: waiting }), mockTask("create_invoice", ["parse_payment"], "pending")],
      { startedAt: null, waitingFor: waiting },
    );
    await showRun(run);
    const held = page.locator('.page-head [data-held-by="held.byFlowRuns"] a');
    await expect(held.textContent()).resolves.toBe("unfinished runs of this flow →");
    await expect(held.getAttribute("href")).resolves.toBe("/runs?flow=order_payment_flow&status=pending%2Crunning");
    await expect(page.locator(".page-head [data-meta=runningFor]").count()).resolves.toBe(0);
    await shot("19-held-run");
    await page.getByTestId("language").click();
    await expect(page.locator(".page-head [data-waiting]").textContent()).resolves.toBe("等待: 流程并发运行数 3/3（maxConcurrentRuns）");
    await expect(held.textContent()).resolves.toBe("此流程未结束的运行 →");
    await shot("19b-held-run-zh");
    await page.getByTestId("language").click();
    const listed = page.waitForResponse((r) => r.url().includes("/api/runs?") && r.url().includes("status=pending%2Crunning"));
    await held.click();
    await page.waitForURL((url) => url.pathname === "/runs" && url.searchParams.get("status") === "pending,running");
    await expect(page.locator("select[name=status]").inputValue()).resolves.toBe("pending,running");
    await expect(page.locator("select[name=status] option:checked").textContent()).resolves.toBe("pending or running");
    // The API takes the comma-separated states: every run it lists is pending or running.
    const answer = await listed;
    expect(answer.status()).toBe(200);
    for (const r of ((await answer.json()) as { runs: { status: string }[] }).runs) expect(["pending", "running"]).toContain(r.status);
  });

  it("a run whose only failure is a notify_only node says so in a notice, not as the run's failure", async () => {
    const run = mockRun(
      "success",
      [
        mockTask("parse_payment", [], "success", { attempts: [mockAttempt(1, "success")], result: { ok: true } }),
        mockTask("create_invoice", ["parse_payment"], "success", { attempts: [mockAttempt(1, "success")], result: { id: "inv" } }),
        mockTask("send_notification", ["parse_payment", "create_invoice"], "failed", {
          attempts: [mockAttempt(1, "failed")],
          error: {
            name: "SmtpError",
            message: "mail relay refused",
            stack: null,
            notRetried: "no retries left (retries: 0)",
            notifyOnly: true,
          },
          finishedAt: ago(40),
        }),
      ],
      { finishedAt: ago(40) },
    );
    await showRun(run);
    const note = page.getByTestId("first-failure");
    await expect(note.getAttribute("data-notify-only")).resolves.toBe("true");
    await expect(note.textContent()).resolves.toBe(
      "A notify_only node failed (the run's outcome ignores it): send_notification · SmtpError: mail relay refused",
    );
    await shot("19c-notify-only-notice");
  });

  it("keeps a run on screen while the API server is unreachable, says so, and picks up again when it answers", async () => {
    const run = mockRun("running", [
      mockTask("parse_payment", [], "success", { attempts: [mockAttempt(1, "success")], result: { ok: true } }),
      mockTask("create_invoice", ["parse_payment"], "running", { attempts: [mockAttempt(1, null)], startedAt: ago(20) }),
    ]);
    let down = false;
    // The stream closes without its end (a server going away), so the page reads the run again and follows it.
    await page.route(`**/api/runs/${run.id}/stream`, (route) =>
      down
        ? route.abort("connectionrefused")
        : route.fulfill({ contentType: "text/event-stream", body: `data: ${JSON.stringify(run)}\n\n` }),
    );
    await page.route(`**/api/runs/${run.id}`, (route) =>
      down ? route.abort("connectionrefused") : route.fulfill({ contentType: "application/json", body: JSON.stringify(run) }),
    );
    await page.goto(`${runtime.url}/runs/${run.id}`);
    await page.locator("h1 .badge").waitFor();
    await expect(page.title()).resolves.toBe(`Run ${run.id.slice(-8)} · ax console`);
    down = true;
    const offline = page.getByTestId("offline");
    await offline.waitFor({ timeout: 10_000 });
    await expect(offline.textContent()).resolves.toBe(
      "Connection to the ax API server lost: this is the run as last seen. The page tries again by itself.",
    );
    // The run as last seen, not a bare "Loading…".
    await expect(page.locator('.dag-node[data-node="create_invoice"]').getAttribute("data-status")).resolves.toBe("running");
    await shot("19d-run-offline");
    down = false;
    await offline.waitFor({ state: "detached", timeout: 10_000 });
    await page.unroute(`**/api/runs/${run.id}/stream`);
    await page.unroute(`**/api/runs/${run.id}`);
  });

  it("a cancelled run says when it was cancelled and offers to rerun its cancelled nodes", async () => {
    const run = mockRun(
      "cancelled",
      [
        mockTask("parse_payment", [], "success", { attempts: [mockAttempt(1, "success")], result: { ok: true } }),
        mockTask("create_invoice", ["parse_payment"], "cancelled", { attempts: [mockAttempt(1, "cancelled")] }),
        mockTask("send_notification", ["create_invoice"], "cancelled"),
      ],
      { finishedAt: ago(40) },
    );
    await showRun(run);
    await expect(page.locator(".page-head [data-meta=cancelled]").textContent()).resolves.toMatch(/^cancelled \w{3},? \d{1,2} \w{3}/);
    await expect(page.locator(".page-head [data-meta=took]").textContent()).resolves.toBe("took 25 s");
    await expect(page.getByRole("button", { name: "Rerun cancelled nodes" }).isVisible()).resolves.toBe(true);
    await expect(page.getByRole("button", { name: "Rerun failed" }).count()).resolves.toBe(0);
    await expect(page.getByTestId("first-failure").count()).resolves.toBe(0);
    await node("send_notification").click();
    await expect(page.locator('[data-panel="send_notification"] [data-input="not-run"]').textContent()).resolves.toBe(
      "Not run: upstream create_invoice cancelled",
    );
    await shot("20-cancelled-run");
  });

  it("a running attempt whose worker went silent past its lease says it is presumed crashed", async () => {
    const silent = { ...mockAttempt(1, null), workerSilentMs: 6000 };
    const quiet = { ...mockAttempt(1, null), workerSilentMs: 2000 };
    const run = mockRun("running", [
      mockTask("parse_payment", [], "running", { attempts: [silent], startedAt: ago(55) }),
      mockTask("create_invoice", [], "running", { attempts: [quiet], startedAt: ago(55) }),
    ]);
    await showRun(run);
    await node("parse_payment").click();
    await expect(page.locator('[data-panel="parse_payment"] .worker-silence').textContent()).resolves.toBe(
      "Worker silent for 6.0 s: presumed crashed. The next worker serving its queue takes the job back, ends this attempt as crashed and starts the node again (a crash is retried whatever retries says, for a node's first 3 crashes); if no worker serves that queue now, start one.",
    );
    await shot("20b-silent-worker");
    await node("create_invoice").click();
    await expect(page.locator('[data-panel="create_invoice"] .worker-silence').textContent()).resolves.toBe("Worker silent for 2.0 s");
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
    // The whole file too: what a diff of later versions leaves out (alert groups, pools) is read there.
    await page.getByRole("button", { name: /^Whole file/ }).click();
    await expect(page.locator("pre[data-config-file]").textContent()).resolves.toMatch(/^max_concurrency: 10\npools:\n/);
    await shot("08a-config-file");
    await page.getByRole("button", { name: "Changes" }).click();
    await page.locator("pre.diff").waitFor();
  });

  it("offers to retire a flow no running process defines, then says it takes no new runs, offers no trigger and leaves it off the Flows page", async () => {
    // A deploy that had the flow, then code without it.
    const old = testRuntime(env, { flows: [oldFlow], roles: ["worker"] });
    await old.start();
    await old.stop();
    await env.sql("update flow_settings set updated_at = now() - interval '1 minute' where flow = 'console_old_flow'");
    // Before it is retired, its card says no running process defines it.
    await page.goto(`${runtime.url}/flows`);
    const card = page.locator(".flow-card", { hasText: "console_old_flow" });
    await expect
      .poll(() => card.locator("[data-undefined]").textContent())
      .toBe(
        "No running process defines it: once its code is gone for good and its runs are done, retire it (ax flow retire console_old_flow).",
      );
    await expect(page.locator(".flow-card", { hasText: "order_payment_flow" }).locator("[data-undefined]").count()).resolves.toBe(0);
    await shot("01b-flows-undefined");
    // A flow a running process defines offers no Retire: the API would refuse it.
    await page.goto(`${runtime.url}/flows/order_payment_flow`);
    await page.locator(".dag-node").first().waitFor();
    await expect(page.getByRole("button", { name: "Retire" }).count()).resolves.toBe(0);
    await page.goto(`${runtime.url}/flows`);
    await card.click({ position: { x: 6, y: 6 } });
    await page.waitForURL(/\/flows\/console_old_flow$/);
    await page.getByRole("button", { name: "Retire" }).click();
    const dialog = page.locator("dialog");
    await expect(dialog.textContent()).resolves.toContain("Retire console_old_flow?");
    await shot("07a-retire-confirm");
    await dialog.getByRole("button", { name: "Retire" }).click();
    const note = page.locator(".note[role=status]", { hasText: "Retired" });
    await note.waitFor();
    await expect(note.textContent()).resolves.toMatch(/takes no new runs \(ax flow retire\).*Its runs stay readable/);
    await page.locator(".dag-node").first().waitFor();
    await expect(page.getByRole("button", { name: "Trigger run" }).count()).resolves.toBe(0);
    await page.getByText("None: a retired flow is not scheduled.").waitFor();
    await shot("07b-retired-flow");
    await page.goto(`${runtime.url}/flows`);
    await page.locator(".flow-card", { hasText: "order_payment_flow" }).waitFor();
    await expect(page.locator(".flow-card", { hasText: "console_old_flow" }).count()).resolves.toBe(0);
  });

  it("lists sent alerts with each sink's answer, a failed webhook's reason written out, as blocks on a phone", async () => {
    const [run] = await env.sql<{ id: string }>("select id from runs where status = 'failed' limit 1");
    const alert = (summary: string, suppressed: number) =>
      JSON.stringify({
        kind: "task_failed",
        group: "ops",
        flow: "order_payment_flow",
        summary,
        task: "create_invoice",
        runId: run!.id,
        suppressed,
      });
    // Rows as a coordinator writes them after delivering (the delivery itself is alerts.test.ts's).
    await env.sql(
      `insert into alert_log (alert, deliveries) values
         ($1, '[{"sink":"webhook","target":"https://pager.example/hook","ok":true}]'),
         ($2, '[{"sink":"webhook","target":"https://pager.example/hook","ok":false,"error":"failed 3 time(s), last: HTTP 502"},{"sink":"log","target":"log","ok":true}]')`,
      [alert("order_payment_flow/create_invoice failed after 4 attempt(s)", 0), alert("create_invoice failed again", 5)],
    );
    await page.goto(`${runtime.url}/alerts`);
    const rows = page.locator("table.alerts tbody tr");
    await expect.poll(() => rows.count()).toBe(2);
    // Newest first: the second insert.
    await expect(rows.nth(0).locator(".al-summary").textContent()).resolves.toContain(
      "create_invoice failed again (+5 held back before it)",
    );
    const failedPill = rows.nth(0).locator(".al-delivery .pill.o-failed");
    await expect(failedPill.getAttribute("title")).resolves.toBe("https://pager.example/hook: failed 3 time(s), last: HTTP 502");
    // Written out too: a touch screen has no hover.
    await expect(rows.nth(0).locator(".delivery-error").textContent()).resolves.toBe("failed 3 time(s), last: HTTP 502");
    // The summary links to the run and looks like a link, underlined, in the text's colour: a paragraph in link blue reads badly.
    await expect(page.evaluate(`getComputedStyle(document.querySelector("table.alerts .al-summary a")).textDecorationLine`)).resolves.toBe(
      "underline",
    );
    await expect(page.evaluate(`getComputedStyle(document.querySelector("table.alerts .al-summary a")).color`)).resolves.toBe(
      "rgb(17, 24, 39)",
    );
    await expect(rows.nth(1).locator(".al-delivery .pill.o-success").count()).resolves.toBe(1);
    await rows.nth(1).locator(".al-summary a").click();
    await page.waitForURL(new RegExp(`/runs/${run!.id}$`));
    await page.goto(`${runtime.url}/alerts`);
    await rows.first().waitFor();
    await shot("08b-alerts");
    // On a phone each alert is a block as wide as the screen: its summary and delivery in view, no sideways scroll.
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      await expect(
        page.evaluate<number>(`document.querySelector("table.alerts").getBoundingClientRect().width`),
      ).resolves.toBeLessThanOrEqual(390);
      for (const cell of [".al-summary", ".delivery-error"]) {
        const box = (await rows.nth(0).locator(cell).boundingBox())!;
        expect(box.x + box.width, cell).toBeLessThanOrEqual(390);
      }
      await shot("08c-alerts-phone");
    } finally {
      await page.setViewportSize({ width: 1440, height: 900 });
    }
    // A webhook's error that runs to a paragraph opens on a click: the row stays a row.
    const long = `failed 3 time(s), last: ${"upstream connect error or disconnect/reset before headers; ".repeat(6)}`;
    await env.sql(`insert into alert_log (alert, deliveries) values ($1, $2)`, [
      alert("create_invoice failed a third time", 0),
      JSON.stringify([{ sink: "webhook", target: "https://pager.example/hook", ok: false, error: long }]),
    ]);
    await page.reload();
    await expect.poll(() => rows.count()).toBe(3);
    const cut = rows.nth(0).locator("details.delivery-error");
    // One line of it, cut by the column's width, words whole.
    const [fontSize, height, shownWidth, fullWidth] = await page.evaluate<number[]>(`(() => {
      const el = document.querySelector("table.alerts tbody tr details.delivery-error summary .short");
      return [Number.parseFloat(getComputedStyle(el).fontSize), el.getBoundingClientRect().height, el.clientWidth, el.scrollWidth];
    })()`);
    expect(height).toBeLessThan(fontSize! * 2);
    expect(fullWidth).toBeGreaterThan(shownWidth!);
    expect((await rows.nth(0).boundingBox())!.height).toBeLessThan(120);
    // However long a sink's error, the table fits a laptop's screen, its Mute buttons in view, and a phone's.
    const overflow = () =>
      page.evaluate<number>(
        `(() => { const wrap = document.querySelector("table.alerts").parentElement; return wrap.scrollWidth - wrap.clientWidth; })()`,
      );
    await expect(overflow()).resolves.toBeLessThanOrEqual(0);
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      await expect(overflow()).resolves.toBeLessThanOrEqual(0);
      const box = (await rows.nth(0).locator(".al-delivery").boundingBox())!;
      expect(box.x + box.width).toBeLessThanOrEqual(390);
    } finally {
      await page.setViewportSize({ width: 1440, height: 900 });
    }
    await cut.locator("summary").click();
    await expect(cut.textContent()).resolves.toContain(long.trimEnd());

    // Muting the noisy alert from its row: the mute shows above the history until it is ended.
    const client = runtime.client();
    const current = await client.config.current();
    const applied = await client.config.apply(
      `${current!.yaml}\nalerts:\n  ops:\n    sinks: [{ type: log, level: info }]\n`,
      "alerts.yaml",
      "test",
    );
    await expect.poll(() => runtime.configVersion).toBe(applied.version);
    await rows.nth(0).getByRole("button", { name: "Mute 1h" }).click();
    const mute = page.locator(".mutes .mute");
    await expect.poll(() => mute.count()).toBe(1);
    await expect(mute.textContent()).resolves.toMatch(/^ops order_payment_flow \/ create_invoice until .* · by anonymous Unmute$/);
    expect((await client.listAlertMutes()).map((m) => [m.group, m.flow, m.task])).toEqual([
      ["ops", "order_payment_flow", "create_invoice"],
    ]);
    await shot("08d-alerts-muted");
    await mute.getByRole("button", { name: "Unmute" }).click();
    await expect.poll(() => mute.count()).toBe(0);
    expect(await client.listAlertMutes()).toEqual([]);
    await expect.poll(() => page.getByRole("button", { name: "Mute 1h" }).count()).toBe(3);

    // A test alert through the group's sinks, sent by the server: each sink's answer shows in the page.
    // The page read the config before ops was added: a reload shows its group at once.
    await page.reload();
    await page.getByRole("button", { name: "Send a test alert to ops" }).click();
    const tested = page.locator(".test-results");
    await expect(tested.textContent()).resolves.toBe("Test alert to ops:log ✓");
    await shot("08e-alerts-test");
    expect((await client.audit({ action: "alerts.test" })).map((e) => [e.actor, e.target])).toEqual([["anonymous", "ops"]]);
  });

  it("lists coordinators and API processes beside the workers, each with the config version it applies", async () => {
    const coordinator = testRuntime(env, { flows, roles: ["coordinator"] });
    await coordinator.start();
    try {
      await page.goto(`${runtime.url}/workers`);
      const row = page.locator("table.others tbody tr", { hasText: coordinator.processId! });
      await row.waitFor();
      await expect(row.locator(".pill").allTextContents()).resolves.toEqual(["coordinator"]);
      const version = `v${runtime.configVersion}`;
      await expect(row.locator("td[data-label=Config]").textContent()).resolves.toBe(version);
      // The API process is also this worker: it is listed once, in the workers' table.
      await expect(page.locator("table.others tbody tr", { hasText: runtime.workerId! }).count()).resolves.toBe(0);
      const worker = page.locator("table tbody tr", { hasText: runtime.workerId! });
      await expect(worker.locator("td[data-label=Config]").textContent()).resolves.toBe(version);
      await expect(page.locator(".behind").count()).resolves.toBe(0);
      await shot("09-workers-processes");
    } finally {
      await coordinator.stop({ timeout: 1 });
    }
  });

  it("marks a process that is not on the newest config version as behind it", async () => {
    // A live cluster's processes apply a new version within seconds, so a straggler is made here by
    // answering, from the real answer, that a newer version is stored.
    await page.route("**/api/config/cluster", async (route) => {
      const response = await route.fetch();
      const body = (await response.json()) as { version: number };
      await route.fulfill({ response, json: { ...body, version: body.version + 1 } });
    });
    try {
      await page.goto(`${runtime.url}/workers`);
      const worker = page.locator("table tbody tr", { hasText: runtime.workerId! });
      await expect.poll(() => worker.locator(".behind").textContent()).toBe(`behind v${runtime.configVersion! + 1}`);
      await expect(worker.locator("td[data-label=Config]").textContent()).resolves.toBe(
        `v${runtime.configVersion}behind v${runtime.configVersion! + 1}`,
      );
      await shot("09c-workers-behind");
    } finally {
      await page.unroute("**/api/config/cluster");
    }
  });

  it("rolls the config back to an earlier version from its history, after asking, and every process applies it", async () => {
    const client = runtime.client();
    const newest = (await client.config.current())!.version;
    expect(newest).toBeGreaterThan(1);
    await page.goto(`${runtime.url}/config`);
    // The newest version is the one in force: nothing to roll back to.
    await page.locator(".versions button.active", { hasText: `v${newest}` }).waitFor();
    await expect(page.locator(".rollback button").count()).resolves.toBe(0);
    await page.locator(".versions button", { hasText: /^v1\b/ }).click();
    await page.getByRole("button", { name: "Roll back to v1" }).click();
    const dialog = page.getByRole("dialog");
    await expect(dialog.getByRole("heading").textContent()).resolves.toBe("Roll back to config v1?");
    await expect(dialog.locator(".confirm-text").textContent()).resolves.toContain(
      `A new version, v${newest + 1}, will be stored with the text of v1 (`,
    );
    // The safe choice has the focus: Enter keeps the version in force.
    await expect.poll(() => page.evaluate("document.activeElement?.textContent")).toBe(`Keep v${newest}`);
    await shot("08e-config-rollback");
    await dialog.getByRole("button", { name: "Roll back to v1" }).click();
    await expect(page.locator(".page-head + .note").textContent()).resolves.toBe(
      `Stored as v${newest + 1}; every process applies it within seconds.`,
    );
    await page.locator(".versions button.active", { hasText: `v${newest + 1}` }).waitFor();
    await shot("08f-config-rolled-back");
    await expect.poll(() => runtime.configVersion).toBe(newest + 1);
    const rolled = (await client.config.current())!;
    expect(rolled.yaml).toBe((await client.config.version(1)).yaml);
    expect(rolled.author).toBe("console");
    expect((await client.audit({ action: "config.rollback" })).map((e) => [e.actor, e.target])).toEqual([
      ["anonymous", String(newest + 1)],
    ]);
  });

  it("writes a new config version in the page: a refused text says where, a valid one shows its diff, then applies", async () => {
    const client = runtime.client();
    const before = (await client.config.current())!;
    await page.goto(`${runtime.url}/config`);
    await page.getByRole("button", { name: "New version" }).click();
    const dialog = page.getByRole("dialog");
    const text = dialog.locator("textarea[name=yaml]");
    // It starts from the version in force, as the API shows it.
    await expect(text.inputValue()).resolves.toContain("max_concurrency: 10");
    const apply = dialog.getByRole("button", { name: "Apply" });
    await expect(apply.isDisabled()).resolves.toBe(true);
    // Checked as it opens (the API's text, without the file's comments): no change, nothing to apply.
    const shown = await text.inputValue();
    expect(shown).not.toContain("#");
    await dialog.getByRole("button", { name: "Check" }).click();
    await expect(dialog.locator(".checked").textContent()).resolves.toBe(
      "Valid, and no change from the version in force: change something to store a new version.",
    );
    await expect(apply.isDisabled()).resolves.toBe(true);

    await text.fill(shown.replace("max_concurrency: 10", "max_concurrency: lots"));
    await dialog.getByRole("button", { name: "Check" }).click();
    // Placed in the text as shown: the stored file's first line is a comment.
    await expect(dialog.locator(".error-note").textContent()).resolves.toMatch(/^console:1:\d+: max_concurrency: must be/);
    await expect(apply.isDisabled()).resolves.toBe(true);

    await text.fill(shown.replace("max_concurrency: 10", "max_concurrency: 12"));
    await dialog.getByRole("button", { name: "Check" }).click();
    await dialog.locator(".checked .diff .add", { hasText: "+max_concurrency: 12" }).waitFor();
    await expect(dialog.locator(".checked .diff .del", { hasText: "-max_concurrency: 10" }).count()).resolves.toBe(1);
    await shot("08g-config-new-version");
    // Nothing is stored by a check.
    expect((await client.config.current())!.version).toBe(before.version);
    await apply.click();
    await expect(page.locator(".page-head + .note").textContent()).resolves.toBe(
      `Stored as v${before.version + 1}; every process applies it within seconds.`,
    );
    await expect(page.getByRole("dialog").count()).resolves.toBe(0);
    await expect.poll(() => runtime.configVersion).toBe(before.version + 1);
    const stored = (await client.config.current())!;
    expect(stored).toMatchObject({ file: "console", author: "console" });
    // The change is made on the stored file: its comments stay.
    expect(stored.yaml).toBe(before.yaml.replace("max_concurrency: 10", "max_concurrency: 12"));
    expect(stored.yaml).toContain("# attempts at once across the whole cluster");
    await page.locator("td.mono", { hasText: "max_concurrency" }).locator("xpath=..").getByText("12").waitFor();

    // Another version stored while the editor is open: the edit is refused, not stored over it, and the
    // editor offers to start again from the newer version.
    await page.getByRole("button", { name: "New version" }).click();
    const reopened = page.getByRole("dialog");
    const opened = await reopened.locator("textarea[name=yaml]").inputValue();
    const meanwhile = await client.config.apply(stored.yaml.replace("max_concurrency: 12", "max_concurrency: 14"), "ops.yaml", "ops");
    await reopened.locator("textarea[name=yaml]").fill(opened.replace("max_concurrency: 12", "max_concurrency: 13"));
    await reopened.getByRole("button", { name: "Check" }).click();
    await expect(reopened.locator(".error-note").textContent()).resolves.toBe(
      `this edit was made on config v${before.version + 1}, but v${meanwhile.version} has been stored since: nothing was stored. Open the version in force (v${meanwhile.version}) again and make the change on it`,
    );
    await shot("08h-config-edit-stale");
    await reopened.getByRole("button", { name: "Open the version in force" }).click();
    await expect.poll(() => reopened.locator("textarea[name=yaml]").inputValue()).toContain("max_concurrency: 14");
    await expect(reopened.locator(".error-note").count()).resolves.toBe(0);
    await reopened.getByRole("button", { name: "Cancel" }).click();
    expect((await client.config.current())!.version).toBe(meanwhile.version);
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

/** Logs a line every `everyMs`: long enough for the console to follow it live. */
