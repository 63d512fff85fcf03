import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, type Runtime } from "ax-scheduler";
import { parse } from "yaml";
import { z } from "zod";
import { isolate } from "../helpers/isolated.js";
import { REPO_ROOT } from "../helpers/processes.js";
import { testRuntime } from "../helpers/runtime.js";

const noop = ax.task({ name: "dashboard_noop" }, () => null);
const dashboardFlow = ax.flow({ name: "dashboard_flow" }, () => {
  noop();
});

const DASHBOARDS = join(REPO_ROOT, "deploy/grafana/dashboards");
const PROMETHEUS = join(REPO_ROOT, "deploy/prometheus");

const rulesFile = z.object({
  groups: z.array(
    z.object({
      name: z.string(),
      rules: z.array(
        z.object({
          alert: z.string().regex(/^Ax[A-Za-z]+$/),
          expr: z.string(),
          for: z.string().optional(),
          labels: z.object({ severity: z.enum(["warning", "critical"]) }),
          annotations: z.object({ summary: z.string().min(1), description: z.string().min(1) }),
        }),
      ),
    }),
  ),
});

/** Every alerting rule's expression, with its name. */
function ruleExprs(): { where: string; expr: string }[] {
  const rules = rulesFile.parse(parse(readFileSync(join(PROMETHEUS, "rules.yml"), "utf8")));
  return rules.groups.flatMap((g) => g.rules.map((r) => ({ where: `rules.yml: ${r.alert}`, expr: r.expr })));
}

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

  it("has a panel for queue depth, scheduler lag, alert deliveries and the backlog, and every metric a panel or an alerting rule names exists", async () => {
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
    for (const metric of [
      "ax_queue_jobs",
      "ax_schedule_lag_seconds_bucket",
      "ax_alert_deliveries_total",
      "ax_runs",
      "ax_redis_eviction_policy_ok",
    ]) {
      expect(used.map((u) => u.metric)).toContain(metric);
    }

    // The alerting rules Prometheus loads (docker-compose mounts them) name only served metrics too.
    const rules = ruleExprs();
    expect(rules.map((r) => r.where)).toEqual(expect.arrayContaining(["rules.yml: AxRunsStuck", "rules.yml: AxRedisMayEvictJobs"]));
    const inRules = rules.flatMap(({ where, expr }) => [...expr.matchAll(/\bax_[a-z0-9_]+/g)].map((m) => ({ where, metric: m[0] })));
    expect(inRules.filter((u) => !served.has(u.metric))).toEqual([]);
    const prometheus = parse(readFileSync(join(PROMETHEUS, "prometheus.yml"), "utf8")) as { rule_files?: string[] };
    expect(prometheus.rule_files).toEqual(["/etc/prometheus/rules.yml"]);
    expect(readFileSync(join(REPO_ROOT, "deploy/docker-compose.yml"), "utf8")).toContain(
      "./prometheus/rules.yml:/etc/prometheus/rules.yml:ro",
    );
  });
});
