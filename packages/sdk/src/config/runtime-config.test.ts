import { describe, expect, it } from "vitest";
import { parseRuntimeConfig } from "./runtime-config.js";
import { AxConfigError } from "@ax/common";

const known = { tasks: ["create_invoice", "send_notification"], flows: ["order_payment_flow"] };

function refusal(text: string): AxConfigError {
  try {
    parseRuntimeConfig(text, "config/runtime.yaml", known);
  } catch (error) {
    expect(error).toBeInstanceOf(AxConfigError);
    return error as AxConfigError;
  }
  throw new Error("the config was accepted");
}

describe("runtime.yaml", () => {
  it("maps snake_case options onto task and flow overrides, durations in ms", () => {
    const config = parseRuntimeConfig(
      [
        "max_concurrency: 10",
        "pools: { core_db: 25 }",
        "tasks:",
        "  create_invoice: { retries: 5, retry_backoff: 10s, timeout: 60s, concurrency: 1, pool: core_db }",
        "  send_notification: { on_failure: notify_only, alert_group: ops }",
        "flows:",
        '  order_payment_flow: { schedule: { cron: "0 2 * * *", timezone: Asia/Shanghai }, overlap: skip }',
      ].join("\n"),
      "config/runtime.yaml",
      known,
    );
    expect(config.maxConcurrency).toBe(10);
    expect(config.pools).toEqual({ core_db: 25 });
    expect(config.tasks.create_invoice).toEqual({ retries: 5, retryBackoff: 10_000, timeout: 60_000, concurrency: 1, pool: "core_db" });
    expect(config.tasks.send_notification).toEqual({ onFailure: "notify_only", alertGroup: "ops" });
    expect(config.flows.order_payment_flow).toEqual({ schedule: { cron: "0 2 * * *", timezone: "Asia/Shanghai" }, overlap: "skip" });
  });

  it("names file, line, column and key of a misspelt option, and the keys expected there", () => {
    const error = refusal(["tasks:", "  create_invoice:", "    retries: 3", "    retry_bakoff: 10s"].join("\n"));
    expect(error.message).toMatch(
      /^config\/runtime\.yaml:4:5: tasks\.create_invoice\.retry_bakoff: unknown key "retry_bakoff" \(expected one of: retries, retry_backoff, backoff,/,
    );
    expect(error).toMatchObject({ file: "config/runtime.yaml", line: 4, column: 5, key: "tasks.create_invoice.retry_bakoff" });
    expect(refusal("max_concurency: 4").message).toMatch(
      /^config\/runtime\.yaml:1:1: max_concurency: unknown key .*expected one of: max_concurrency, pools,/,
    );
  });

  it("refuses a value of the wrong type, at its line", () => {
    const error = refusal(["tasks:", "  create_invoice: { retries: many }"].join("\n"));
    expect(error.line).toBe(2);
    expect(error.key).toBe("tasks.create_invoice.retries");
  });

  it("refuses a task or flow the code does not define, listing the ones it does", () => {
    expect(refusal(["tasks:", "  create_invoce: { retries: 1 }"].join("\n")).message).toMatch(
      /runtime\.yaml:2:3: tasks\.create_invoce: unknown task "create_invoce" \(defined: create_invoice, send_notification\)/,
    );
    expect(refusal(["flows:", "  nightly: { overlap: skip }"].join("\n")).message).toMatch(/unknown flow "nightly"/);
  });

  it("refuses a pool that is not declared under pools:", () => {
    expect(refusal(["tasks:", "  create_invoice: { pool: core_db }"].join("\n")).message).toMatch(
      /tasks\.create_invoice\.pool: pool "core_db" is not defined under pools:/,
    );
  });

  it("refuses a task taking more slots than its pool has, naming task, pool, both numbers and the fix", () => {
    const error = refusal(["pools: { core_db: 2 }", "tasks:", "  create_invoice: { pool: { name: core_db, slots: 5 } }"].join("\n"));
    expect(error.message).toBe(
      'config/runtime.yaml:3:44: tasks.create_invoice.pool.slots: task "create_invoice" takes 5 slots of pool "core_db" but the pool has 2, so it could never start; make pools.core_db at least 5, or tasks.create_invoice.pool.slots at most 2',
    );
  });

  it("checks the pools under pools: against the slots tasks take in code, unless the YAML sets the task's pool", () => {
    const withCode = {
      ...known,
      taskPools: { create_invoice: { name: "core_db", slots: 5 }, retired_task: { name: "core_db", slots: 9 } },
    };
    const parse = (text: string) => parseRuntimeConfig(text, "config/runtime.yaml", withCode);
    expect(() => parse("max_concurrency: 4\npools:\n  core_db: 2\n")).toThrow(
      'config/runtime.yaml:3:3: pools.core_db: task "create_invoice" takes 5 slots of pool "core_db" (in its code) but the pool has 2, so it could never start; make pools.core_db at least 5, or give the task at most 2 (tasks.create_invoice.pool: { name: core_db, slots: 2 })',
    );
    // Only tasks some registered flow uses count: retired_task takes 9.
    expect(parse("pools: { core_db: 5 }").pools).toEqual({ core_db: 5 });
    expect(parse("pools: { core_db: 2 }\ntasks:\n  create_invoice: { pool: { name: core_db, slots: 2 } }").pools).toEqual({ core_db: 2 });
    // Unsized, the task waits saying so until a version sizes it.
    expect(parse("pools: { other: 1 }").pools).toEqual({ other: 1 });
  });

  it("refuses a bad duration and broken YAML with the line", () => {
    expect(refusal(["tasks:", "  create_invoice: { timeout: soon }"].join("\n")).message).toMatch(/"soon" is not a duration/);
    expect(refusal(["tasks:", "  create_invoice: { retries: 1", "flows: {}"].join("\n")).message).toMatch(/YAML syntax/);
  });
});
