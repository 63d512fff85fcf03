import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { yamlValue } from "@ax/common";
import { ax, type EffectiveOption, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { runAx } from "../helpers/processes.js";
import { testRuntime } from "../helpers/runtime.js";

const perOrder = ax.task(
  { name: "sources_per_order", concurrency: { max: 1, key: "order_id" }, rateLimit: { max: 5, per: "1s", key: "order_id" } },
  (o: { order_id: string }) => o.order_id,
);
const grouped = ax.task({ name: "sources_grouped", alertGroup: "ops" }, () => 1);
const plain = ax.task({ name: "sources_plain" }, () => 1);
const flow = ax.flow({ name: "sources_flow" }, (o) => {
  perOrder(o);
  grouped();
  plain();
});

describe("effective config: each option's source", () => {
  const env = isolate("cfgsources");
  let runtime: Runtime;

  beforeAll(async () => {
    runtime = testRuntime(env, { flows: [flow], roles: ["coordinator"] });
    await runtime.start();
  });

  afterAll(async () => {
    await runtime?.stop({ timeout: 1 });
    await env.cleanup();
  });

  const options = async (task: string) => {
    const shown = await runtime.client().config.effective({ task });
    return (name: string): EffectiveOption | undefined => shown.tasks[task]!.find((o) => o.option === name);
  };

  it("a per-key limit set in code is from code, as the concurrency or rate_limit option it is read from", async () => {
    const option = await options("sources_per_order");
    expect(option("concurrency")).toMatchObject({ value: null, source: "code" });
    // As written: the key's path (or "function"), not the compiled function ax reads it with.
    expect(option("concurrency_key")).toEqual({
      option: "concurrency_key",
      value: { max: 1, strategy: "queue", key: "order_id" },
      source: "code",
    });
    expect(option("rate_limit")).toMatchObject({ value: null, source: "code" });
    expect(option("rate_limit_key")).toMatchObject({ value: { max: 5, perMs: 1000 }, source: "code" });
    // The text names where the limit is, rather than "(not set)" beside the source that set it.
    const shown = await runAx(["--storage", env.storage, "--prefix", env.prefix, "config", "show", "--task", "sources_per_order"]);
    expect(shown.stdout).toMatch(/^ {2}concurrency +\(per key: concurrency_key\) +code$/m);
    expect(shown.stdout).toMatch(/^ {2}rate_limit +\(per key: rate_limit_key\) +code$/m);
    expect(shown.stdout).toMatch(/^ {2}timeout +\(not set\) +default$/m);
  });

  it("a task-wide limit from YAML replaces the per-key one: both read from YAML", async () => {
    const { version } = await runtime.client().config.apply("tasks:\n  sources_per_order: { concurrency: 2 }\n", "sources.yaml", "test");
    const option = await options("sources_per_order");
    expect(option("concurrency")).toEqual({ option: "concurrency", value: 2, source: `yaml v${version}` });
    expect(option("concurrency_key")).toEqual({ option: "concurrency_key", value: null, source: `yaml v${version}` });
    expect(option("rate_limit_key")).toMatchObject({ source: "code" });
  });

  it("alert_group shows the group failures go to: default when unset, the task's own otherwise", async () => {
    expect((await options("sources_plain"))("alert_group")).toEqual({ option: "alert_group", value: "default", source: "default" });
    expect((await options("sources_grouped"))("alert_group")).toEqual({ option: "alert_group", value: "ops", source: "code" });
  });

  it("retention is a cluster option: the 90-day default until a version sets it, then that version's", async () => {
    const retention = async () => (await runtime.client().config.effective()).cluster.find((o) => o.option === "retention");
    const before = await retention();
    expect(before).toEqual({ option: "retention", value: 90 * 86_400_000, source: "default" });
    expect(yamlValue(before!.option, before!.value)).toBe("90d");
    const { version } = await runtime.client().config.apply("retention: 30d\n", "sources.yaml", "test");
    const after = await retention();
    expect(after).toEqual({ option: "retention", value: 30 * 86_400_000, source: `yaml v${version}` });
    expect(yamlValue(after!.option, after!.value)).toBe("30d");
  });
});
