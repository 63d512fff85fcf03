import { setTimeout as sleep } from "node:timers/promises";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";
import { launchChromium, requireConsoleAndBrowser, screenshot } from "./browser-env.js";

const start = ax.task({ name: "layout_start" }, async (x: unknown) => x);
const leaf = ax.task({ name: "layout_leaf" }, (input: unknown): number => JSON.stringify(input).length);
const badLeaf = ax.task({ name: "layout_bad_leaf", retries: 0 }, (_input: unknown): number => {
  throw new Error("the widget service said no (HTTP 503)");
});
const gather = ax.task({ name: "layout_gather" }, (...xs: number[]) => xs.length);
/** Twenty leaves in one column, the failing one near the bottom: off screen were the graph not framed around it. */
const wide = ax.flow({ name: "layout_wide_fanout_flow_with_a_rather_long_name_that_does_not_fit_a_card" }, (input) => {
  const s = start(input);
  const outs = [];
  for (let i = 0; i < 20; i++) outs.push(i === 17 ? badLeaf(s) : leaf(s));
  gather(...outs);
});
const step = ax.task({ name: "layout_step" }, async (x: unknown) => x);
const chain = ax.flow({ name: "layout_chain" }, (input) => {
  let r = step(input);
  for (let i = 1; i < 30; i++) r = step(r);
});

/** Three nodes and a skip edge: on a phone it opens whole, not cut off. */
const small = ax.flow({ name: "layout_small" }, (input) => {
  const a = leaf(input);
  const b = leaf(a);
  gather(a, b);
});

/** Names alike for their first 20 characters: cut at a fixed width they read the same. */
const inventory = ax.task({ name: "enrich_with_inventory_snapshot" }, (x: unknown) => x);
const customer = ax.task({ name: "enrich_with_customer_profile" }, (x: unknown) => x);
const pair = ax.task({ name: "layout_pair" }, (a: unknown, b: unknown) => [a, b]);
const longNames = ax.flow({ name: "layout_long_names" }, (input) => {
  pair(inventory(input), customer(input));
});
/** Names too long for the widest node, alike but for their end. */
const stage1 = ax.task({ name: "transform_customer_records_for_export_stage_01" }, (x: unknown) => x);
const stage2 = ax.task({ name: "transform_customer_records_for_export_stage_02" }, (x: unknown) => x);
const longerNames = ax.flow({ name: "layout_longer_names" }, (input) => {
  stage2(stage1(input));
});

/** Thirty runs and more: its card's status strip is at its fullest. */
const busy = ax.flow({ name: "layout_busy" }, (input) => {
  step(input);
});

describe("the web console's layout: large graphs and phones", () => {
  const env = isolate("console_layout");
  let runtime: Runtime;
  let browser: Browser;
  const runs: Record<string, string> = {};

  beforeAll(async () => {
    requireConsoleAndBrowser();
    runtime = testRuntime(env, {
      flows: [wide, chain, busy, small, longNames, longerNames],
      roles: ["coordinator", "worker", "api"],
      port: 0,
    });
    await runtime.start();
    const client = runtime.client();
    await client.triggerFlows(
      busy,
      // More than a page of the runs list (50) with the other runs.
      Array.from({ length: 52 }, (_, i) => i),
    );
    for (const [name, flow] of [
      ["wide", wide.name],
      ["chain", chain.name],
    ] as const) {
      runs[name] = await client.triggerFlow(flow, {});
    }
    for (const id of Object.values(runs)) {
      const deadline = Date.now() + 30_000;
      while (!["success", "failed"].includes((await client.getRun(id))?.status ?? "")) {
        if (Date.now() > deadline) throw new Error(`run ${id} did not finish`);
        await sleep(200);
      }
    }
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await runtime?.stop();
    await env.cleanup();
  });

  async function open(path: string, viewport: { width: number; height: number }, lang: "en" | "zh" = "en"): Promise<Page> {
    const page = await browser.newPage({ viewport, locale: lang === "zh" ? "zh-CN" : "en-US" });
    await page.addInitScript(`localStorage.setItem("ax.lang", ${JSON.stringify(lang)})`);
    await page.goto(`${runtime.url}${path}`);
    return page;
  }

  /** A node's box on screen and its key's rendered font size, after React Flow's zoom. */
  async function nodeOnScreen(page: Page, key: string) {
    const node = page.locator(`.dag-node[data-node="${key}"]`);
    await node.waitFor();
    const box = (await node.boundingBox())!;
    const dag = (await page.locator(".dag").boundingBox())!;
    // A string, as the test project has no DOM types: the key's font size times React Flow's scale.
    const fontPx = await page.evaluate<number>(`(() => {
      const el = document.querySelector('.dag-node[data-node="${key}"] .dag-key');
      return Number.parseFloat(getComputedStyle(el).fontSize) * el.getBoundingClientRect().width / el.offsetWidth;
    })()`);
    const inside = box.x >= dag.x && box.y >= dag.y && box.x + box.width <= dag.x + dag.width && box.y + box.height <= dag.y + dag.height;
    return { inside, fontPx };
  }

  /** Every one of `keys` inside the graph's box at a readable size, with nothing left to pan to. */
  async function expectSeenWhole(page: Page, keys: string[]) {
    for (const key of keys) {
      const seen = await nodeOnScreen(page, key);
      expect(seen.inside, key).toBe(true);
      expect(seen.fontPx, key).toBeGreaterThanOrEqual(11);
    }
    await expect(page.locator(".dag").getAttribute("data-overflows")).resolves.toBe("false");
    await expect(page.getByTestId("dag-hint").count()).resolves.toBe(0);
  }

  it("stacks a wide fan-out's twenty leaves side by side in a frame, so the whole graph is seen at a readable size", async () => {
    const page = await open(`/runs/${runs.wide}`, { width: 1440, height: 900 });
    await page.locator('.dag-node[data-status="failed"]').waitFor();
    const keys = [
      "layout_start",
      "layout_gather",
      "layout_bad_leaf",
      "layout_leaf",
      ...Array.from({ length: 18 }, (_, i) => `layout_leaf#${i + 2}`),
    ];
    await expectSeenWhole(page, keys);
    const dag = (await page.locator(".dag").boundingBox())!;
    expect(dag.height).toBeLessThanOrEqual(900 * 0.7 + 1);
    // One frame around the leaves, captioned with their count and marked by the failed one; one edge into it, one out.
    const stack = page.getByTestId("dag-stack");
    await expect(stack.textContent()).resolves.toBe("20 nodes");
    await expect(stack.getAttribute("class")).resolves.toContain("s-failed");
    await expect.poll(() => page.locator(".react-flow__edge").count()).toBe(2);
    const frame = (await stack.boundingBox())!;
    for (const key of ["layout_leaf", "layout_bad_leaf", "layout_leaf#19"]) {
      const box = (await page.locator(`.dag-node[data-node="${key}"]`).boundingBox())!;
      expect(
        box.x >= frame.x && box.x + box.width <= frame.x + frame.width && box.y >= frame.y && box.y + box.height <= frame.y + frame.height,
        key,
      ).toBe(true);
    }
    // The leaves stay nodes of their own: a click opens the failed one's panel.
    await page.locator('.dag-node[data-node="layout_bad_leaf"]').click();
    await page.locator('[data-panel="layout_bad_leaf"]').waitFor();
    await screenshot(page, `layout-run-wide`);
    await page.close();
  });

  it("opens a flow's graph at its start, and keeps long flow names inside their cards", async () => {
    const page = await open(`/flows/${wide.name}`, { width: 1440, height: 900 });
    const first = await nodeOnScreen(page, "layout_start");
    expect(first).toMatchObject({ inside: true });
    expect(first.fontPx).toBeGreaterThanOrEqual(11);
    // The card title keeps to its card: the page does not grow sideways.
    await page.goto(`${runtime.url}/flows`);
    await page.locator(".flow-card h2").first().waitFor();
    await expect(page.evaluate<number>("document.documentElement.scrollWidth")).resolves.toBeLessThanOrEqual(1440);
    await page.close();
  });

  it("widens a graph's nodes to its longest task name, so names alike are shown whole", async () => {
    const page = await open(`/flows/${longNames.name}`, { width: 1440, height: 900 });
    for (const key of ["enrich_with_inventory_snapshot", "enrich_with_customer_profile", "layout_pair"]) {
      const name = page.locator(`.dag-node[data-node="${key}"] .dag-name`);
      await name.waitFor();
      const [shown, needed] = await name.evaluate((el) => [el.clientWidth, el.scrollWidth]);
      expect(needed, key).toBeLessThanOrEqual(shown!);
    }
    await screenshot(page, `layout-long-names`);
    // Longer than the widest node: shortened in the middle, so their different ends still show.
    await page.goto(`${runtime.url}/flows/${longerNames.name}`);
    const shown: string[] = [];
    for (const key of ["transform_customer_records_for_export_stage_01", "transform_customer_records_for_export_stage_02"]) {
      const name = page.locator(`.dag-node[data-node="${key}"] .dag-name`);
      await name.waitFor();
      const [width, needed] = await name.evaluate((el) => [el.clientWidth, el.scrollWidth]);
      expect(needed, key).toBeLessThanOrEqual(width!);
      const text = (await name.textContent()) ?? "";
      expect(text).toMatch(/^transform_.+….+_stage_0[12]$/);
      await expect(page.locator(`.dag-node[data-node="${key}"] .dag-key`).getAttribute("title")).resolves.toBe(key);
      shown.push(text);
    }
    expect(new Set(shown).size).toBe(2);
    await screenshot(page, `layout-longer-names`);
    await page.close();
  });

  it("folds a 30-node chain into bands, so it is seen whole at a readable size", async () => {
    const page = await open(`/runs/${runs.chain}`, { width: 1440, height: 900 });
    const keys = ["layout_step", ...Array.from({ length: 29 }, (_, i) => `layout_step#${i + 2}`)];
    await expectSeenWhole(page, keys);
    // Read as lines of text: each band left to right, the next one under it.
    const at = async (key: string) => (await page.locator(`.dag-node[data-node="${key}"]`).boundingBox())!;
    const [first, second] = [await at("layout_step"), await at("layout_step#2")];
    expect(second.x).toBeGreaterThan(first.x);
    expect(second.y).toBe(first.y);
    const last = await at("layout_step#30");
    expect(last.y).toBeGreaterThan(first.y + first.height);
    // Every edge is drawn, the ones back to the next band's start included.
    await expect.poll(() => page.locator(".react-flow__edge").count()).toBe(29);
    // Each ends in an arrowhead: the edge back to a band's start runs right to left.
    const arrows = await page.evaluate<string[]>(
      `[...document.querySelectorAll(".react-flow__edge-path")].map((p) => p.getAttribute("marker-end") ?? "")`,
    );
    expect(arrows.filter((m) => m.includes("arrowclosed"))).toHaveLength(29);
    await screenshot(page, `layout-run-chain`);
    await page.close();
  });

  it("keeps the runs list's page in the address: a reload stays on it, Back returns to the first", async () => {
    const page = await open("/runs", { width: 1440, height: 900 });
    const rows = page.locator("table.runs tbody tr");
    await expect.poll(() => rows.count()).toBe(50);
    const firstOfPageOne = await rows.first().locator(".r-id").textContent();
    // The button is at the list's foot; the next page is read from its top.
    await page.evaluate("window.scrollTo(0, document.body.scrollHeight)");
    await page.getByRole("button", { name: /^Older runs/ }).click();
    await page.waitForURL((url) => url.searchParams.has("cursor"));
    await expect.poll(async () => (await rows.first().locator(".r-id").textContent()) !== firstOfPageOne).toBe(true);
    await expect(page.evaluate<number>("window.scrollY")).resolves.toBe(0);
    const pageTwo = await rows.locator(".r-id").allTextContents();
    expect(pageTwo.length).toBeGreaterThan(0);
    expect(pageTwo.length).toBeLessThan(50);
    await page.reload();
    await expect.poll(() => rows.locator(".r-id").allTextContents()).toEqual(pageTwo);
    await page.goBack();
    await expect.poll(() => rows.first().locator(".r-id").textContent()).toBe(firstOfPageOne);
    await expect(page.getByRole("button", { name: "Newest" }).isDisabled()).resolves.toBe(true);
    // A run's id is a link inside a clickable row: one click is one page, so one Back returns.
    await rows.first().locator(".r-id a").click();
    await page.waitForURL(/\/runs\/[0-9a-f-]{36}$/);
    await page.goBack();
    await page.waitForURL((url) => url.pathname === "/runs");
    await page.close();
  });

  it("shows an unknown flow filter with a way to clear it, and a not-found page for an unknown address", async () => {
    const page = await open("/runs?flow=nonexistent_flow", { width: 1440, height: 900 }, "zh");
    await page.locator('select[name=flow] option[value="nonexistent_flow"]').waitFor({ state: "attached" });
    await expect(page.locator("select[name=flow]").inputValue()).resolves.toBe("nonexistent_flow");
    await screenshot(page, `layout-runs-unknown-flow-zh`);
    await page.getByRole("button", { name: "清除筛选" }).click();
    await page.locator("table tbody tr").first().waitFor();
    await expect(page.locator("table thead").textContent()).resolves.not.toContain("Run");
    await page.goto(`${runtime.url}/nowhere`);
    await page.getByRole("heading", { name: "页面不存在" }).waitFor();
    await expect(page.title()).resolves.toBe("页面不存在 · ax console");
    // A run id nobody has (mistyped, or pruned by retention) says so, and why a run may be gone.
    const missing = "00000000-0000-4000-8000-000000000000";
    await page.goto(`${runtime.url}/runs/${missing}`);
    await page.getByRole("heading", { name: "找不到这次运行" }).waitFor();
    await expect(page.locator(".empty").textContent()).resolves.toContain(`没有 id 为 ${missing} 的运行。早于保留期`);
    await screenshot(page, `layout-run-not-found-zh`);
    await page.getByRole("link", { name: "← 前往运行列表" }).click();
    await page.waitForURL((url) => url.pathname === "/runs");
    // So does a flow name nobody defined: not the API's advice to whoever triggers it.
    await page.goto(`${runtime.url}/flows/nonexistent_flow`);
    await page.getByRole("heading", { name: "找不到这个流程" }).waitFor();
    await expect(page.locator(".empty").textContent()).resolves.toContain("没有名为 nonexistent_flow 的流程");
    await expect(page.locator(".error-note").count()).resolves.toBe(0);
    await page.close();
  });

  it("lists the busy task queues first and folds a cluster's many idle ones away", async () => {
    const queue = (name: string, busy: Partial<{ waiting: number; active: number; limited: string }> = {}) => ({
      name: `default.${name}`,
      group: "default",
      task: name,
      waiting: 0,
      active: 0,
      delayed: 0,
      limited: null,
      workers: 1,
      slots: { running: 0, capacity: null },
      ...busy,
    });
    const idle = ["a_idle", "b_idle", "c_idle", "d_idle", "e_idle", "f_idle"];
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 }, locale: "en-US" });
    await page.addInitScript(`localStorage.setItem("ax.lang", "en")`);
    await page.route("**/api/queues", (route) =>
      route.fulfill({
        contentType: "application/json",
        body: JSON.stringify({
          queues: [
            ...idle.slice(0, 3).map((n) => queue(n)),
            queue("gpu_render", { waiting: 2, active: 1, limited: "pool gpu (1/1)" }),
            ...idle.slice(3).map((n) => queue(n)),
            queue("import", { active: 1 }),
          ],
        }),
      }),
    );
    await page.goto(`${runtime.url}/workers`);
    const names = () => page.locator("table:not(.others) tbody tr td.stack-title").allTextContents();
    await expect.poll(names).toEqual(["default.gpu_render", "default.import"]);
    await page.getByRole("button", { name: "Show 6 idle queues" }).click();
    await expect.poll(names).toEqual(["default.gpu_render", "default.import", ...idle.map((n) => `default.${n}`)]);
    await page.getByRole("button", { name: "Hide idle queues" }).waitFor();
    // This runtime runs every role: its row says so, so no coordinator seems missing.
    const self = page.locator("table tbody tr", { hasText: runtime.workerId! });
    await expect(self.locator("td[data-label=Roles] .pill").allTextContents()).resolves.toEqual(["coordinator", "worker", "api"]);
    await expect(page.locator(".empty").textContent()).resolves.toContain("also runs tasks");
    await page.close();
  });

  it("shows a seconds cron's fire times with their seconds", async () => {
    const page = await open(`/flows/${chain.name}`, { width: 1440, height: 900 });
    // A 6-field cron's ticks 20 s apart: without seconds they would read 06:56, 06:56, 06:57.
    const times = ["2030-01-02T06:56:20Z", "2030-01-02T06:56:40Z", "2030-01-02T06:57:00Z"];
    await page.route("**/api/schedules", (route) =>
      route.fulfill({
        contentType: "application/json",
        body: JSON.stringify({
          schedules: [
            {
              flow: chain.name,
              cron: "*/20 * * * * *",
              timezone: "UTC",
              paused: false,
              nextFireTimes: times,
              lastTick: {
                logicalDate: "2030-01-02T06:56:00Z",
                status: "skipped",
                reason: "run 0b5c1f5e-4a43-4a52-9d1e-3d2b1a0c9f11 of this flow is still unfinished (overlap: skip)",
                runId: null,
                runStatus: null,
              },
            },
          ],
        }),
      }),
    );
    await page.reload();
    const schedule = page.locator("section", { has: page.getByRole("heading", { name: "Schedule" }) });
    await schedule.locator("li time").first().waitFor();
    const shown = await schedule.locator("li time").allTextContents();
    expect(shown.map((t) => t.match(/\d\d:\d\d(:\d\d)?/)?.[0])).toEqual(["06:56:20", "06:56:40", "06:57:00"]);
    // The newest tick made no run: the panel says so and why.
    await expect(schedule.locator(".last-tick").textContent()).resolves.toMatch(
      /^Last tick .*06:56:00 UTC · skipped: run 0b5c1f5e-\S+ of this flow is still unfinished \(overlap: skip\)$/,
    );
    // The Schedules page lists it the same way, one row a flow, the last tick under its column.
    await page.goto(`${runtime.url}/schedules`);
    const row = page.locator(`tr[data-schedule="${chain.name}"]`);
    await row.waitFor();
    await expect(row.locator(".sc-cron").textContent()).resolves.toBe("*/20 * * * * * UTC");
    await expect(row.locator(".sc-next").textContent()).resolves.toMatch(/06:56:20 UTC$/);
    await expect(row.locator(".last-tick").textContent()).resolves.toMatch(/^\S.*06:56:00 UTC · skipped: run 0b5c1f5e-/);
    await expect(row.getByRole("button", { name: "Pause" }).isVisible()).resolves.toBe(true);
    await screenshot(page, `layout-schedules`, { fullPage: true });
    await page.close();
  });

  it("writes config values as runtime.yaml does, and an unset option as not set", async () => {
    const page = await open("/config", { width: 1440, height: 900 });
    await page.route("**/api/config/effective", (route) =>
      route.fulfill({
        contentType: "application/json",
        body: JSON.stringify({
          version: 1,
          cluster: [],
          flows: {},
          tasks: {
            layout_step: [
              { option: "rate_limit", value: { max: 1, perMs: 5000 }, source: "yaml v1" },
              { option: "timeout", value: 30_000, source: "yaml v1" },
              { option: "retry_backoff", value: 1500, source: "code" },
              { option: "alert_group", value: null, source: "default" },
            ],
          },
        }),
      }),
    );
    await page.reload();
    const value = (option: string) => page.locator("tr", { has: page.locator("td", { hasText: option }) }).locator("td.value");
    await expect(value("rate_limit").textContent()).resolves.toBe("{ max: 1, per: 5s }");
    await expect(value("timeout").textContent()).resolves.toBe("30s");
    await expect(value("retry_backoff").textContent()).resolves.toBe("1500ms");
    await page.getByLabel("show defaults").check();
    await expect(value("alert_group").textContent()).resolves.toBe("not set");
    await screenshot(page, `layout-config-values`);
    await page.close();
  });

  it("opens a small graph whole on a phone, a large one no taller than 55% of the screen", async () => {
    const page = await open(`/flows/${small.name}`, { width: 390, height: 844 });
    await page.locator(".dag-node").first().waitFor();
    const keys = await page.evaluate<string[]>(`[...document.querySelectorAll(".dag-node")].map((n) => n.dataset.node)`);
    expect(keys).toHaveLength(3);
    for (const key of keys) expect((await nodeOnScreen(page, key)).inside, key).toBe(true);
    const dag = page.locator(".dag");
    // Top to bottom, whole: nothing to pan to, so a swipe over it scrolls the page.
    await expect(dag.getAttribute("data-layout")).resolves.toBe("TB");
    await expect(dag.getAttribute("data-pans")).resolves.toBe("false");
    await expect(page.evaluate(`getComputedStyle(document.querySelector(".react-flow__pane")).touchAction`)).resolves.toBe("pan-y");
    await screenshot(page, `layout-phone-small-graph`, { fullPage: true });
    for (const id of [runs.wide, runs.chain]) {
      await page.goto(`${runtime.url}/runs/${id}`);
      await page.locator(".dag-node").first().waitFor();
      expect((await dag.boundingBox())!.height).toBeLessThanOrEqual(844 * 0.55 + 1);
    }
    await page.close();
  });

  it("stacks a fan-out's leaves one under the other on a phone, in the flow's order, with the failed one in view", async () => {
    const page = await open(`/runs/${runs.wide}`, { width: 390, height: 844 });
    await page.locator('.dag-node[data-status="failed"]').waitFor();
    const stack = page.getByTestId("dag-stack");
    await expect(stack.textContent()).resolves.toBe("20 nodes");
    // Edges are drawn once the nodes are measured, a frame or more after the nodes show.
    await expect.poll(() => page.locator(".react-flow__edge").count()).toBe(2);
    const leaves = [
      "layout_leaf",
      ...Array.from({ length: 16 }, (_, i) => `layout_leaf#${i + 2}`),
      "layout_bad_leaf",
      "layout_leaf#18",
      "layout_leaf#19",
    ];
    const boxes = await Promise.all(leaves.map(async (key) => (await page.locator(`.dag-node[data-node="${key}"]`).boundingBox())!));
    // One column, read down in the order the flow added them.
    expect(new Set(boxes.map((b) => Math.round(b.x))).size).toBe(1);
    for (let i = 1; i < boxes.length; i++) expect(boxes[i]!.y, leaves[i]).toBeGreaterThan(boxes[i - 1]!.y);
    const failed = await nodeOnScreen(page, "layout_bad_leaf");
    expect(failed).toMatchObject({ inside: true });
    expect(failed.fontPx).toBeGreaterThanOrEqual(11);
    await screenshot(page, `layout-phone-fanout`, { fullPage: true });
    await page.close();
  });

  for (const lang of ["en", "zh"] as const) {
    it(`has no sideways page scroll on a phone (${lang}): runs, a failed run and its node panel`, async () => {
      const page = await open("/runs", { width: 390, height: 844 }, lang);
      await page.locator("table tbody tr").first().waitFor();
      const scrolls = () => page.evaluate<number>("document.documentElement.scrollWidth - document.documentElement.clientWidth");
      await expect(scrolls()).resolves.toBe(0);
      await screenshot(page, `layout-phone-runs-${lang}`, { fullPage: true });
      await page.goto(`${runtime.url}/runs/${runs.wide}`);
      await page.locator('.dag-node[data-status="failed"]').click();
      await page.locator(".node-panel tr[data-attempt]").first().waitFor();
      await screenshot(page, `layout-phone-run-${lang}`, { fullPage: true });
      // Past the right edge only inside boxes that scroll or pan on their own: the graph, tables.
      const wide = await page.evaluate<string[]>(`[...document.querySelectorAll("main *:not(.dag *, .table-wrap *)")]
        .filter((el) => el.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
        .map((el) => el.tagName + "." + el.className)`);
      expect(wide).toEqual([]);
      await expect(scrolls()).resolves.toBe(0);
      const panel = (await page.locator(".node-panel").boundingBox())!;
      expect(panel.width).toBeGreaterThan(390 - 40);
      await page.close();
    });

    it(`keeps every page and the navigation, language switch included, on a phone's screen (${lang})`, async () => {
      const page = await open("/flows", { width: 390, height: 844 }, lang);
      // A language chosen earlier is the page's from the start, not only after a switch.
      await expect(page.evaluate("document.documentElement.lang")).resolves.toBe(lang === "zh" ? "zh-CN" : "en");
      // Signed in (this API checks no token): Sign out is in the bar too, and the bar is one line.
      await page.evaluate(`localStorage.setItem("ax.token", "any")`);
      await page.reload();
      await page.locator("main h1").first().waitFor();
      const tops = await page.evaluate<number[]>(`[...document.querySelectorAll(".sidebar > *, .sidebar-foot > *")]
        .map((el) => Math.round(el.getBoundingClientRect().top + el.getBoundingClientRect().height / 2))`);
      expect(tops.length).toBeGreaterThanOrEqual(8);
      expect(Math.max(...tops) - Math.min(...tops), tops.join(", ")).toBeLessThanOrEqual(2);
      for (const path of ["/flows", `/flows/${wide.name}`, "/schedules", "/workers", "/alerts", "/config", "/tokens", "/audit"]) {
        await page.goto(`${runtime.url}${path}`);
        await page.locator("main h1").first().waitFor();
        await page.waitForLoadState("networkidle");
        const outside = await page.evaluate<string[]>(`[...document.querySelectorAll("nav *, main *:not(.dag *, .table-wrap *)")]
          .filter((el) => { const r = el.getBoundingClientRect(); return r.width > 0 && (r.right > document.documentElement.clientWidth + 1 || r.left < -1); })
          .map((el) => el.tagName + "." + el.className)`);
        expect(outside, path).toEqual([]);
        await expect(page.getByTestId("language").isVisible()).resolves.toBe(true);
        await screenshot(page, `layout-phone-${path.split("/")[1]}${path.split("/")[2] ? "-flow" : ""}-${lang}`, { fullPage: true });
      }
      // A queue's numbers are on the screen, each under its column's name, not cut off at its edge.
      await page.goto(`${runtime.url}/workers`);
      const waiting = page.locator(".table.stack tbody tr").last().locator("td").nth(1);
      await waiting.waitFor();
      const box = (await waiting.boundingBox())!;
      expect(box.x + box.width).toBeLessThanOrEqual(390);
      await expect(waiting.textContent()).resolves.toMatch(/^\d+$/);
      // A string, as the test project has no DOM types.
      await expect(
        page.evaluate<string>(
          `getComputedStyle([...document.querySelectorAll(".table.stack tbody tr:last-child td:nth-child(2)")].at(-1), "::before").content`,
        ),
      ).resolves.toBe(lang === "zh" ? '"等待"' : '"Waiting"');
      await page.close();
    });
  }
});
