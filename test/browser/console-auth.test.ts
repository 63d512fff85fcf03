import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import type { Browser, Dialog, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, Client, type Runtime } from "ax-scheduler";
import { migrate, openStore } from "@ax/store";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";
import { launchChromium, requireConsoleAndBrowser, screenshot } from "./browser-env.js";

// A test may hold the task before a line, so what the page shows while the node runs does not
// depend on how fast a loaded machine gets the page open.
let tailMayWrite = Number.POSITIVE_INFINITY;
const tail = ax.task({ name: "console_tail" }, async (input: { lines: number; everyMs: number }) => {
  for (let i = 1; i <= input.lines; i++) {
    while (i > tailMayWrite) await sleep(50);
    ax.context().log.info(`step ${i} of ${input.lines}`);
    await sleep(input.everyMs);
  }
  return { lines: input.lines };
});
const tailFlow = ax.flow({ name: "console_tail_flow" }, (input) => tail(input));
const nightly = ax.task({ name: "console_nightly" }, () => "done");
const nightlyFlow = ax.flow({ name: "console_nightly_flow", schedule: "0 3 * * *" }, () => nightly());

describe("the web console against an API that checks tokens", () => {
  const env = isolate("console_auth");
  let runtime: Runtime;
  let client: Client;
  let redis: Redis;
  let browser: Browser;
  let page: Page;
  const token: Record<"trigger" | "admin", string> = { trigger: "", admin: "" };

  const shot = (name: string) => screenshot(page, name, { fullPage: true });
  const failures = () => redis.keys(`${env.prefix}:auth-failures:*`);
  // As strings: the test's TypeScript has no DOM types.
  const storedToken = () => page.evaluate(`localStorage.getItem("ax.token")`);
  const storeToken = (value: string) => page.evaluate(`localStorage.setItem("ax.token", ${JSON.stringify(value)})`);
  /** Signed in as `value` whatever an earlier test left, so each test also runs alone. */
  const signedInAs = async (value: string) => {
    await page.goto(`${runtime.url}/healthz`);
    await storeToken(value);
  };
  const signIn = async (value: string) => {
    await page.locator("input[name=token]").fill(value);
    await page.getByRole("button", { name: "Sign in" }).click();
  };

  beforeAll(async () => {
    requireConsoleAndBrowser();
    redis = new Redis(env.redis);
    runtime = testRuntime(env, {
      flows: [tailFlow, nightlyFlow],
      roles: ["coordinator", "worker", "api"],
      port: 0,
      insecureNoAuth: false,
    });
    const store = openStore({ url: env.storage });
    await migrate(store).finally(() => store.close());
    client = new Client({ storage: env.storage, redis: env.redis, prefix: env.prefix });
    // Tokens are stored before the API starts: it refuses to start open without one.
    for (const scope of ["trigger", "admin"] as const)
      token[scope] = (await client.tokens.create({ name: `console_${scope}`, scope })).token;
    await runtime.start();
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1440, height: 900 }, locale: "en-US" });
  });

  afterAll(async () => {
    await browser?.close();
    await runtime?.stop();
    await client?.close();
    redis?.disconnect();
    await env.cleanup();
  });

  it("page loads without a token never lock the address; a wrong token says why and the right one then signs in", async () => {
    for (const path of ["/", "/runs", "/workers", "/config", "/flows/console_nightly_flow", "/"]) {
      await page.goto(`${runtime.url}${path}`);
      await page.getByRole("heading", { name: "Sign in to ax" }).waitFor();
    }
    await expect.poll(() => page.evaluate(`document.activeElement?.name`)).toBe("token");
    expect(await failures()).toEqual([]);

    await signIn("ax_0123456789abcdef_not-the-secret");
    const alert = page.getByRole("alert");
    await expect.poll(() => alert.textContent()).toContain("This token is not valid: the bearer token is unknown, revoked or expired");
    await expect(page.locator("input[name=token]").inputValue()).resolves.toBe("ax_0123456789abcdef_not-the-secret");
    await expect(storedToken()).resolves.toBeNull();
    expect(await failures()).toHaveLength(1);
    await shot("11-login-invalid");
    await page.getByRole("button", { name: "中文" }).click();
    await expect.poll(() => alert.textContent()).toContain("此令牌无效");
    await shot("12-login-invalid-zh");
    await page.getByRole("button", { name: "English" }).click();

    await signIn(token.admin);
    await page.locator(".flow-card", { hasText: "console_nightly_flow" }).waitFor();
    await expect(storedToken()).resolves.toBe(token.admin);
    await redis.del(...(await failures()));
  });

  it("a token revoked while a running run is open ends its live view within seconds and shows the sign-in screen", async () => {
    const reader = (await client.tokens.create({ name: "console_revoked_reader", scope: "read" })).token;
    await signedInAs(reader);
    const runId = await client.triggerFlow("console_tail_flow", { lines: 80, everyMs: 250 });
    await page.goto(`${runtime.url}/runs/${runId}`);
    await page.locator('.dag-node[data-node="console_tail"][data-status="running"]').waitFor({ timeout: 15_000 });
    await page.locator("h1 .live").waitFor();
    await client.tokens.revoke("console_revoked_reader");
    await page.getByRole("heading", { name: "Sign in to ax" }).waitFor({ timeout: 15_000 });
    await expect(storedToken()).resolves.toBeNull();
    await client.cancel(runId);
    // The refused requests counted toward the address's limit: the next tests start from none.
    const counted = await failures();
    if (counted.length > 0) await redis.del(...counted);
  });

  it("a stale token costs one failure per page load, then the login screen shows the server's 429 with when to retry", async () => {
    await storeToken("ax_0123456789abcdef_revoked-long-ago");
    await page.goto(`${runtime.url}/flows/console_nightly_flow`);
    await page.getByRole("heading", { name: "Sign in to ax" }).waitFor();
    // The flow page asks for four things at once; only the first presented the stale token.
    expect(Number(await redis.get((await failures())[0]!))).toBe(1);
    await expect(storedToken()).resolves.toBeNull();

    const alert = page.getByRole("alert");
    for (let i = 2; i <= 10; i++) {
      await signIn(`wrong-${i}`);
      await expect.poll(async () => Number(await redis.get((await failures())[0]!))).toBe(i);
      await expect.poll(() => alert.textContent()).toContain("This token is not valid");
    }
    await signIn(token.admin);
    await expect
      .poll(() => alert.textContent())
      .toMatch(/^Signing in is paused for this address: too many failed authentication attempts from this address; retry in \d+ s/);
    await expect(page.locator("input[name=token]").inputValue()).resolves.toBe(token.admin);
    await shot("13-login-limited");
    await redis.del(...(await failures()));
    await signIn(token.admin);
    await page.getByRole("heading", { name: "console_nightly_flow" }).waitFor();
  });

  it("actions a token's scope does not allow are disabled and say which scope they need; an admin token pauses and resumes a schedule", async () => {
    const reader = (await client.tokens.create({ name: "console_reader", scope: "read" })).token;
    await signedInAs(reader);
    await page.goto(`${runtime.url}/flows/console_nightly_flow`);
    await expect.poll(() => page.getByTestId("signed-in").textContent()).toBe("console_reader · read");
    const triggerButton = page.getByRole("button", { name: "Trigger" });
    await expect.poll(() => triggerButton.isDisabled()).toBe(true);
    await expect(triggerButton.getAttribute("title")).resolves.toContain("Needs a token with the trigger scope; this one has read");

    await signedInAs(token.trigger);
    await page.goto(`${runtime.url}/flows/console_nightly_flow`);
    const schedule = page.locator("section", { has: page.getByRole("heading", { name: "Schedule" }) });
    await schedule.locator(".pill", { hasText: "active" }).waitFor();
    // Fire times in the schedule's own zone, named, each with its date.
    await expect(schedule.locator("li time").first().textContent()).resolves.toMatch(/^\w{3},? \d{1,2} \w{3}( \d{4})?, 03:00 UTC$/);
    await expect.poll(() => page.getByTestId("signed-in").textContent()).toBe("console_trigger · trigger");
    await expect(triggerButton.isEnabled()).resolves.toBe(true);
    const pause = schedule.getByRole("button", { name: "Pause" });
    await expect.poll(() => pause.isDisabled()).toBe(true);
    await expect(pause.getAttribute("title")).resolves.toContain("Needs a token with the admin scope; this one has trigger");
    await shot("14-pause-needs-admin");

    await storeToken(token.admin);
    await page.reload();
    await schedule.getByRole("button", { name: "Pause" }).click();
    await schedule.locator(".pill", { hasText: "paused" }).waitFor();
    await expect(schedule.getByRole("alert").count()).resolves.toBe(0);
    await schedule.getByRole("button", { name: "Resume" }).click();
    await schedule.locator(".pill", { hasText: "active" }).waitFor();
  });

  it("backfills a scheduled flow from its page: one run per past tick, with progress, and retries nothing when nothing failed", async () => {
    await signedInAs(token.admin);
    await page.goto(`${runtime.url}/flows/console_nightly_flow`);
    const backfills = page.getByTestId("backfills");
    await backfills.getByRole("heading", { name: "Backfill" }).waitFor();
    await expect(backfills.getByRole("button", { name: "Start backfill" }).isDisabled()).resolves.toBe(true);
    await backfills.locator("input[name=backfillFrom]").fill("2026-11-20");
    await backfills.locator("input[name=backfillTo]").fill("2026-11-23");
    await backfills.locator("input[name=backfillAtOnce]").fill("1");
    await backfills.getByRole("button", { name: "Start backfill" }).click();
    await expect.poll(() => backfills.getByRole("status").textContent()).toBe("Backfill started: 3 ticks, 3 new runs, 1 at once.");
    const row = backfills.locator("li[data-backfill]").first();
    await row.locator(".pill", { hasText: "finished" }).waitFor({ timeout: 30_000 });
    await expect(row.locator(".backfill-counts").textContent()).resolves.toMatch(/^3\/3 done · 3 succeeded · 0 failed/);
    // Nothing failed: no retry offered, and a finished backfill has nothing to cancel.
    await expect(row.getByRole("button").count()).resolves.toBe(0);
    const runs = await client.listRuns({ flow: "console_nightly_flow", trigger: "backfill" });
    expect(runs.map((r) => r.logicalDate).sort()).toEqual([
      "2026-11-20T03:00:00.000Z",
      "2026-11-21T03:00:00.000Z",
      "2026-11-22T03:00:00.000Z",
    ]);
    await shot("21-backfill");
    // A range the API refuses says why in the section.
    await backfills.locator("input[name=backfillFrom]").fill("2026-11-23");
    await backfills.locator("input[name=backfillTo]").fill("2026-11-20");
    await backfills.getByRole("button", { name: "Start backfill" }).click();
    await expect.poll(() => backfills.getByRole("alert").textContent()).toContain("is empty: from must be before to");
  });

  it("a running node's panel shows its new log lines as they are written", async () => {
    await signedInAs(token.admin);
    tailMayWrite = 4;
    const runId = await client.triggerFlow("console_tail_flow", { lines: 16, everyMs: 50 });
    await page.goto(`${runtime.url}/runs/${runId}`);
    const node = page.locator('.dag-node[data-node="console_tail"]');
    await node.and(page.locator('[data-status="running"]')).waitFor({ timeout: 15_000 });
    await node.click();
    const panel = page.locator('[data-panel="console_tail"]');
    const lines = panel.locator(".logs .log");
    await expect.poll(() => lines.count(), { timeout: 10_000 }).toBe(4);
    tailMayWrite = 9;
    await expect.poll(() => lines.count(), { timeout: 10_000 }).toBe(9);
    await expect(node.getAttribute("data-status")).resolves.toBe("running");
    await expect(panel.locator("h3 .live").isVisible()).resolves.toBe(true);
    await shot("15-node-logs-live");
    tailMayWrite = Number.POSITIVE_INFINITY;
    await node.and(page.locator('[data-status="success"]')).waitFor({ timeout: 20_000 });
    await expect.poll(() => lines.count(), { timeout: 5_000 }).toBe(16);
    await expect(lines.last().textContent()).resolves.toContain("step 16 of 16");
    await expect(panel.locator("h3 .live").count()).resolves.toBe(0);
    await shot("16-node-logs-done");
  });

  it("cancelling a run asks first, in the page: kept it runs on, confirmed it is cancelled", async () => {
    await signedInAs(token.admin);
    const runId = await client.triggerFlow("console_tail_flow", { lines: 60, everyMs: 250 });
    await page.goto(`${runtime.url}/runs/${runId}`);
    await page.locator('.dag-node[data-node="console_tail"][data-status="running"]').waitFor({ timeout: 15_000 });
    // Asked in the page, not by the browser's own prompt; the safe choice has the focus, so Enter keeps the run.
    const prompts: string[] = [];
    const prompted = (dialog: Dialog) => {
      prompts.push(dialog.message());
      void dialog.dismiss();
    };
    page.on("dialog", prompted);
    await page.getByRole("button", { name: "Cancel run" }).click();
    const ask = page.getByRole("dialog", { name: "Cancel this run?" });
    await expect(ask.textContent()).resolves.toContain("Its running attempts are stopped and its unfinished nodes will not run.");
    await expect.poll(() => page.evaluate("document.activeElement?.textContent")).toBe("Keep running");
    await shot("18-cancel-confirm");
    await page.keyboard.press("Enter");
    await expect.poll(() => page.locator("dialog").count()).toBe(0);
    await sleep(500);
    expect((await client.getRun(runId))?.status).toBe("running");
    // Escape keeps it running too.
    await page.getByRole("button", { name: "Cancel run" }).click();
    await ask.waitFor();
    await page.keyboard.press("Escape");
    await expect.poll(() => page.locator("dialog").count()).toBe(0);
    expect((await client.getRun(runId))?.status).toBe("running");
    await page.getByRole("button", { name: "Cancel run" }).click();
    await ask.getByRole("button", { name: "Cancel run" }).click();
    page.off("dialog", prompted);
    expect(prompts).toEqual([]);
    await page.locator('h1 .badge[data-status="cancelled"]').waitFor({ timeout: 15_000 });
    expect((await client.getRun(runId))?.status).toBe("cancelled");
    // The attempt the cancel stopped is recorded failed with AxCancelledError: shown as cancelled, in grey, not as a failure.
    expect((await client.getRun(runId)).tasks[0]!.attempts[0]).toMatchObject({ outcome: "failed", error: { name: "AxCancelledError" } });
    await page.locator('.dag-node[data-node="console_tail"]').click();
    const outcome = page.locator('[data-panel="console_tail"] [data-attempt="1"] .a-outcome .pill');
    await expect.poll(() => outcome.textContent()).toBe("cancelled");
    await expect(outcome.getAttribute("class")).resolves.toBe("pill o-cancelled");
  });

  it("a 2 ms attempt's timeline has distinct tick labels", async () => {
    const runId = await client.triggerFlow("console_nightly_flow", {});
    await client.waitForRun(runId, { timeout: "20s" });
    // How long a fast task takes depends on the machine: the stream answers the run with a 2 ms attempt.
    const answer = await fetch(`${runtime.url}/api/runs/${runId}`, { headers: { authorization: `Bearer ${token.admin}` } });
    const run = (await answer.json()) as { tasks: { attempts: { startedAt: string; finishedAt: string }[] }[] };
    const attempt = run.tasks[0]!.attempts[0]!;
    attempt.finishedAt = new Date(Date.parse(attempt.startedAt) + 2).toISOString();
    await page.route(`**/api/runs/${runId}/stream`, (route) =>
      route.fulfill({ contentType: "text/event-stream", body: `data: ${JSON.stringify(run)}\n\nevent: end\ndata: {}\n\n` }),
    );
    await signedInAs(token.admin);
    await page.goto(`${runtime.url}/runs/${runId}`);
    await page.locator('.dag-node[data-node="console_nightly"][data-status="success"]').click();
    const ticks = page.locator('[data-panel="console_nightly"] .timeline .recharts-cartesian-axis-tick-value');
    await ticks.first().waitFor();
    const labels = await ticks.allTextContents();
    expect(labels.length).toBeGreaterThan(1);
    expect(new Set(labels).size, labels.join(", ")).toBe(labels.length);
    await shot("17-short-attempt");
    await page.unroute(`**/api/runs/${runId}/stream`);
  });

  it("the audit page lists who did what, newest first, each target linked; a token under admin is told it needs admin", async () => {
    await signedInAs(token.trigger);
    await page.goto(`${runtime.url}/audit`);
    await expect
      .poll(() => page.locator(".empty").textContent())
      .toContain("The audit log needs a token with the admin scope; this one has trigger.");

    const triggered = await fetch(`${runtime.url}/api/flows/console_nightly_flow/runs`, {
      method: "POST",
      headers: { authorization: `Bearer ${token.trigger}`, "content-type": "application/json" },
      body: JSON.stringify({ payload: {} }),
    });
    expect(triggered.status).toBe(201);
    const { runId } = (await triggered.json()) as { runId: string };

    await signedInAs(token.admin);
    await page.goto(`${runtime.url}/audit`);
    const newest = page.locator("table.audit tbody tr").first();
    await expect.poll(() => newest.locator(".au-action").textContent()).toBe("run.trigger");
    await expect(newest.locator(".au-actor").textContent()).resolves.toBe("console_trigger");
    await expect(newest.locator(".au-target a").getAttribute("href")).resolves.toBe("/flows/console_nightly_flow");
    const run = newest.locator(".au-detail a.au-run");
    await expect(run.textContent()).resolves.toBe(`run ${runId.slice(-8)}`);
    await expect(newest.locator(".au-detail").textContent()).resolves.toContain("created: true");
    await shot("18-audit");
    // Filtered by a family of actions and by actor; a filter nothing matches says so.
    await page.locator("select[name=auditAction]").selectOption("token");
    await expect.poll(() => page.locator("table.audit tbody tr").first().locator(".au-action").textContent()).toMatch(/^token\./);
    await page.locator("input[name=auditActor]").fill("nobody_at_all");
    await expect.poll(() => page.locator(".empty").textContent()).toBe("No entry matches these filters.");
    await page.locator("input[name=auditActor]").fill("");
    await page.locator("select[name=auditAction]").selectOption("");
    await expect.poll(() => newest.locator(".au-action").textContent()).toBe("run.trigger");
    await run.click();
    await page.waitForURL(`**/runs/${runId}`);
  });

  it("the tokens page creates a token shown once, lists it and revokes it after asking; a token under admin is told it needs admin", async () => {
    await signedInAs(token.trigger);
    await page.goto(`${runtime.url}/tokens`);
    await expect
      .poll(() => page.locator(".empty").textContent())
      .toContain("Managing tokens needs a token with the admin scope; this one has trigger.");

    await signedInAs(token.admin);
    await page.goto(`${runtime.url}/tokens`);
    await page.locator('tr[data-token="console_admin"]').waitFor();
    await page.locator("input[name=tokenName]").fill("console_dashboard");
    await page.locator("select[name=tokenScope]").selectOption("read");
    await page.locator("select[name=tokenExpires]").selectOption("30");
    await page.getByRole("button", { name: "Create token" }).click();
    const secret = await page.getByTestId("new-token").textContent();
    expect(secret).toMatch(/^\S{20,}$/);
    const row = page.locator('tr[data-token="console_dashboard"]');
    await expect.poll(() => row.locator(".pill").textContent()).toBe("read");
    await expect(row.textContent()).resolves.toContain("not yet");
    await shot("19-tokens");
    // Served over plain http at an address other than localhost, a page gets no clipboard: the secret is selected instead.
    await page.evaluate(`Object.defineProperty(navigator, "clipboard", { value: undefined, configurable: true })`);
    await page.getByRole("button", { name: "Copy" }).click();
    await expect.poll(() => page.evaluate(`window.getSelection()?.toString()`)).toBe(secret);
    await expect(page.locator(".token-created").textContent()).resolves.toContain("the token is selected, press Ctrl+C");
    await shot("19a-token-copy-by-hand");
    // The secret works, with the scope chosen.
    const session = await fetch(`${runtime.url}/api/session`, { headers: { authorization: `Bearer ${secret}` } });
    expect(await session.json()).toMatchObject({ auth: true, name: "console_dashboard", scope: "read" });
    const expires = (await client.tokens.list()).find((k) => k.name === "console_dashboard")!.expiresAt!;
    expect(Math.round((expires.getTime() - Date.now()) / 86_400_000)).toBe(30);

    // Revoking asks first; kept, the token still works.
    await row.getByRole("button", { name: "Revoke" }).click();
    await page.getByRole("button", { name: "Keep it" }).click();
    await expect(row.count()).resolves.toBe(1);
    await row.getByRole("button", { name: "Revoke" }).click();
    await page.locator("dialog").getByRole("button", { name: "Revoke" }).click();
    await expect.poll(() => row.count()).toBe(0);
    expect((await fetch(`${runtime.url}/api/session`, { headers: { authorization: `Bearer ${secret}` } })).status).toBe(401);
  });
});
