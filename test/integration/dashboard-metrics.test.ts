import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { REPO_ROOT } from "../helpers/processes.js";
import { testRuntime } from "../helpers/runtime.js";

const noop = ax.task({ name: "dashboard_noop" }, () => null);
const dashboardFlow = ax.flow({ name: "dashboard_flow" }, () => {
  noop();
});

const DASHBOARDS = join(REPO_ROOT, "deploy/grafana/dashboards");

/** Every `expr` of every panel of every dashboard, with where it is. */
function panelExprs(): { where: string; expr: string }[] {
  const found: { where: string; expr: string }[] = [];
  for (const file of readdirSync(DASHBOARDS).filter((f) => f.endsWith(".json"))) {
    const dashboard = JSON.parse(readFileSync(join(DASHBOARDS, file), "utf8")) as {
      panels: { title: string; targets?: { expr: string }[] }[];
    };
    for (const panel of dashboard.panels)
      for (const t of panel.targets ?? []) found.push({ where: `${file}: ${panel.title}`, expr: t.expr });
  }
  return found;
}

describe("the Grafana dashboards in deploy/ use only metrics that /metrics serves", () => {
  const env = isolate("dash");
  let runtime: Runtime;

  beforeAll(async () => {
    // Every role, as `ax dev` runs it: the one process serves all of the metric families.
    runtime = testRuntime(env, { flows: [dashboardFlow], roles: ["coordinator", "worker", "api"], port: 0 });
    await runtime.start();
  });

  afterAll(async () => {
    await runtime?.stop();
    await env.cleanup();
  });

  it("has a panel for queue depth, scheduler lag and alert deliveries, and every metric a panel names exists", async () => {
    const text = await (await fetch(`${runtime.url}/metrics`)).text();
    const served = new Set<string>();
    for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
      served.add(name!);
      if (type === "histogram") for (const suffix of ["_bucket", "_sum", "_count"]) served.add(`${name}${suffix}`);
    }
    const exprs = panelExprs();
    const used = exprs.flatMap(({ where, expr }) => [...expr.matchAll(/\bax_[a-z0-9_]+/g)].map((m) => ({ where, metric: m[0] })));
    expect(used.length).toBeGreaterThan(0);
    expect(used.filter((u) => !served.has(u.metric))).toEqual([]);
    for (const metric of ["ax_queue_jobs", "ax_schedule_lag_seconds_bucket", "ax_alert_deliveries_total"]) {
      expect(used.map((u) => u.metric)).toContain(metric);
    }
  });
});
