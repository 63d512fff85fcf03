import { describe, expect, it } from "vitest";
import { overridden, resolveSchedule } from "../flow-options.js";
import { resolveTaskOptions } from "../options.js";
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
    const error = refusal(["tasks:", "  create_invoice:", "    retries: 3", "    retry_wait: 10s"].join("\n"));
    expect(error.message).toMatch(
      /^config\/runtime\.yaml:4:5: tasks\.create_invoice\.retry_wait: unknown key "retry_wait" \(expected one of: retries, retry_backoff, backoff,/,
    );
    expect(error).toMatchObject({ file: "config/runtime.yaml", line: 4, column: 5, key: "tasks.create_invoice.retry_wait" });
    // A letter or two off one option: that option is named, and one it leaves missing is said to be
    // missing (not "must be a whole number").
    expect(refusal(["tasks:", "  create_invoice:", "    retry_bakoff: 10s"].join("\n")).message).toBe(
      "config/runtime.yaml:3:5: tasks.create_invoice.retry_bakoff: unknown key; did you mean retry_backoff?",
    );
    expect(refusal(["pools: { db: 3 }", "tasks:", "  create_invoice: { pool: { name: db, slot: 2 } }"].join("\n")).message).toBe(
      [
        "config/runtime.yaml:3:39: tasks.create_invoice.pool.slot: unknown key; did you mean slots?",
        "config/runtime.yaml:3:27: tasks.create_invoice.pool.slots: missing (a whole number of at least 1)",
      ].join("\n"),
    );
    expect(refusal("max_parallel: 4").message).toMatch(
      /^config\/runtime\.yaml:1:1: max_parallel: unknown key .*expected one of: max_concurrency, pools,/,
    );
    expect(refusal("max_concurency: 4").message).toBe(
      "config/runtime.yaml:1:1: max_concurency: unknown key; did you mean max_concurrency?",
    );
    // Two edits off a 7-letter option are named in a word of six letters or more when no other option is
    // as close; `retrys` is as close to retry_on, but it is the plural of retry misspelt. Named, not
    // checked as that option: its value is not refused as the option's too (one line).
    for (const [key, meant] of [
      ["retrys", "retries"],
      ["timaut", "timeout"],
    ]) {
      expect(refusal(`tasks: { create_invoice: { ${key}: many } }`).message).toMatch(
        new RegExp(`^config/runtime\\.yaml:1:\\d+: tasks\\.create_invoice\\.${key}: unknown key; did you mean ${meant}\\?$`),
      );
    }
    // In a shorter word two edits are most of it: no guess, the keys expected.
    expect(refusal("tasks: { create_invoice: { tries: 3 } }").message).toMatch(
      /tasks\.create_invoice\.tries: unknown key "tries" \(expected one of: /,
    );
  });

  it("reports every problem of a file at once, one per line in the file's order, the first one's place on the error", () => {
    const error = refusal(
      [
        "tasks:",
        "  create_invoice:",
        "    retriess: 3",
        "    timeout: soon",
        "  send_notfication: { retries: 1 }",
        "flows:",
        "  order_payment_flow: { maxConcurrentRuns: 0 }",
      ].join("\n"),
    );
    expect(error.message.split("\n")).toEqual([
      expect.stringMatching(/^config\/runtime\.yaml:3:5: tasks\.create_invoice\.retriess: unknown key; did you mean retries\?$/),
      expect.stringMatching(/^config\/runtime\.yaml:4:5: tasks\.create_invoice\.timeout: "soon" is not a duration/),
      expect.stringMatching(/^config\/runtime\.yaml:5:3: tasks\.send_notfication: unknown task "send_notfication"/),
      expect.stringMatching(
        /^config\/runtime\.yaml:7:25: flows\.order_payment_flow\.maxConcurrentRuns: unknown key; did you mean max_concurrent_runs\?$/,
      ),
      expect.stringMatching(/^config\/runtime\.yaml:7:\d+: flows\.order_payment_flow\.maxConcurrentRuns: /),
    ]);
    expect(error).toMatchObject({ line: 3, column: 5, key: "tasks.create_invoice.retriess" });
    // Task and flow names are checked even when a value is wrong; pools once every value is valid.
    const mixed = refusal(["tasks:", "  create_invoice: { retries: many }", "  nope_task: { retries: 1 }"].join("\n"));
    expect(mixed.message.split("\n")).toEqual([
      expect.stringMatching(/^config\/runtime\.yaml:2:\d+: tasks\.create_invoice\.retries: /),
      expect.stringMatching(/^config\/runtime\.yaml:3:3: tasks\.nope_task: unknown task "nope_task"/),
    ]);
    const names = refusal(["tasks:", "  send_notfication: { retries: 1, pool: db }", "flows: { order_flow: {} }"].join("\n"));
    expect(names.message.split("\n")).toEqual([
      expect.stringMatching(/^config\/runtime\.yaml:2:3: tasks\.send_notfication: unknown task "send_notfication"/),
      expect.stringMatching(/^config\/runtime\.yaml:2:\d+: tasks\.send_notfication\.pool: pool "db" is not defined under pools:$/),
      expect.stringMatching(/^config\/runtime\.yaml:3:10: flows\.order_flow: unknown flow "order_flow"/),
    ]);
  });

  it("refuses an error named in both retry_on and no_retry_on of one task", () => {
    expect(refusal(["tasks:", "  create_invoice: { retry_on: [TimeoutError], no_retry_on: [TimeoutError] }"].join("\n")).message).toMatch(
      /^config\/runtime\.yaml:2:\d+: tasks\.create_invoice\.no_retry_on: TimeoutError is in both retry_on and no_retry_on/,
    );
  });

  it("refuses a camelCase spelling of an option at any level, naming the snake_case key to write", () => {
    expect(refusal(["flows:", "  order_payment_flow:", "    catchUp: all"].join("\n"))).toMatchObject({
      message: "config/runtime.yaml:3:5: flows.order_payment_flow.catchUp: unknown key; did you mean catch_up?",
      line: 3,
      column: 5,
      key: "flows.order_payment_flow.catchUp",
    });
    for (const [text, key, meant] of [
      ["maxConcurrency: 4", "maxConcurrency", "max_concurrency"],
      ["tasks: { create_invoice: { retryBackoff: 1s } }", "tasks.create_invoice.retryBackoff", "retry_backoff"],
      ["tasks: { create_invoice: { resources: { memoryMb: 64 } } }", "tasks.create_invoice.resources.memoryMb", "memory_mb"],
      ["{ pools: { db: 2 }, tasks: { create_invoice: { pool: { name: db, Slots: 1 } } } }", "tasks.create_invoice.pool.Slots", "slots"],
      ["flows: { order_payment_flow: { max-catch-up: 3 } }", "flows.order_payment_flow.max-catch-up", "max_catch_up"],
      ["alerts: { ops: { sinks: [{ type: log }], triggers: { slowRun: 1h } } }", "alerts.ops.triggers.slowRun", "slow_run"],
      [
        "alerts: { ops: { sinks: [{ type: webhook, url: 'https://x.test', secretEnv: K }] } }",
        "alerts.ops.sinks.0.secretEnv",
        "secret_env",
      ],
    ]) {
      expect(refusal(text!).message).toMatch(
        new RegExp(`^config/runtime\\.yaml:1:\\d+: ${key!.replace(/\./g, "\\.")}: unknown key; did you mean ${meant}\\?$`),
      );
    }
  });

  it("refuses two spellings of one option, whichever comes first, instead of letting the later win", () => {
    for (const flow of ["{ catch_up: none, catchUp: all }", "{ catchUp: all, catch_up: none }"]) {
      expect(refusal(`flows: { order_payment_flow: ${flow} }`).message).toMatch(
        /flows\.order_payment_flow\.catchUp: unknown key; did you mean catch_up\? \(catch_up is given too: remove catchUp\)$/,
      );
    }
  });

  it("says what a schedule must be when it is neither a cron string nor { cron, timezone }", () => {
    for (const value of ["5", "[a]", "{ cron: 5 }"]) {
      expect(refusal(`flows: { order_payment_flow: { schedule: ${value} } }`).message).toMatch(
        /flows\.order_payment_flow\.schedule: must be a cron string \("0 2 \* \* \*"\), or \{ cron, timezone \}$/,
      );
    }
  });

  it("lists the keys expected wherever an unknown key is, nested mappings and sequences included", () => {
    for (const [text, key, expected] of [
      [
        'flows: { order_payment_flow: { schedule: { cron: "0 2 * * *", zone: UTC } } }',
        "flows.order_payment_flow.schedule.zone",
        "cron, timezone",
      ],
      [
        "tasks: { create_invoice: { rate_limit: { max: 1, per: 1s, burst: 2 } } }",
        "tasks.create_invoice.rate_limit.burst",
        "max, per, key",
      ],
      ["tasks: { create_invoice: { concurrency: { max: 1, limit: 2 } } }", "tasks.create_invoice.concurrency.limit", "max, key, strategy"],
      ["tasks: { create_invoice: { pool: { name: db, size: 1 } } }", "tasks.create_invoice.pool.size", "name, slots"],
      [
        "flows: { order_payment_flow: { concurrency: { max: 1, key: a, per: 1 } } }",
        "flows.order_payment_flow.concurrency.per",
        "max, key, strategy",
      ],
      ["alerts: { ops: { sinks: [{ type: log, url: x }] } }", "alerts.ops.sinks.0.url", "type, level"],
      [
        "alerts: { ops: { sinks: [{ type: log }], triggers: { failure: true } } }",
        "alerts.ops.triggers.failure",
        "terminal_failure, consecutive_failures,",
      ],
    ]) {
      const error = refusal(text!);
      expect(error.message).toContain(`: ${key}: unknown key "${key!.split(".").pop()}" (expected one of: ${expected}`);
      expect(error).toMatchObject({ file: "config/runtime.yaml", line: 1, key });
      expect(error.column).toBeGreaterThan(1);
    }
  });

  it("keeps names as written: tasks, flows, pools, alert groups and webhook headers", () => {
    const config = parseRuntimeConfig(
      [
        "pools: { core_DB_pool: 2 }",
        "alerts:",
        "  ops_Team:",
        "    sinks: [{ type: webhook, url: 'https://x.test', headers: { x_api_key: k, X-Trace: t } }]",
      ].join("\n"),
      "config/runtime.yaml",
    );
    expect(config.pools).toEqual({ core_DB_pool: 2 });
    expect(config.alerts.ops_Team!.sinks[0]).toMatchObject({ headers: { x_api_key: "k", "X-Trace": "t" } });
  });

  it("null removes an option whose default is none, whatever the code sets; others cannot be null", () => {
    const config = parseRuntimeConfig(
      [
        "tasks:",
        "  create_invoice: { timeout: null, heartbeat_timeout: ~, concurrency: null, rate_limit: null, pool: null, retry_on: null }",
        "  send_notification: { resources: null, alert_group: null, retries: 2 }",
      ].join("\n"),
      "config/runtime.yaml",
      { ...known, taskPools: { create_invoice: { name: "core_db", slots: 5 } } },
    );
    const code = {
      timeout: 60_000,
      heartbeatTimeout: 5000,
      concurrency: 2,
      rateLimit: { max: 5, per: 1000 },
      pool: "core_db",
      retryOn: ["TimeoutError"],
      retries: 3,
    };
    expect(resolveTaskOptions("create_invoice", code, config.tasks.create_invoice)).toMatchObject({
      timeoutMs: null,
      heartbeatTimeoutMs: null,
      concurrency: null,
      rateLimit: null,
      pool: null,
      retryOn: null,
      retries: 3,
    });
    expect(
      resolveTaskOptions("send_notification", { resources: { memoryMb: 64 }, alertGroup: "ops" }, config.tasks.send_notification),
    ).toMatchObject({ resources: null, alertGroup: null, retries: 2 });
    const error = refusal(["tasks:", "  create_invoice: { retries: null }"].join("\n"));
    expect(error.key).toBe("tasks.create_invoice.retries");
    expect(error.message).toMatch(
      /retries: expected a number, got null; only retry_on, timeout, heartbeat_timeout, concurrency, rate_limit, pool, resources, alert_group may be null/,
    );
  });

  it("null removes a flow's schedule, cap or key limit that its code sets", () => {
    const config = parseRuntimeConfig(
      "flows:\n  order_payment_flow: { schedule: null, max_concurrent_runs: ~, concurrency: null, overlap: queue }\n",
      "config/runtime.yaml",
      known,
    );
    const code = { schedule: "0 2 * * *", maxConcurrentRuns: 3, concurrency: { max: 1, key: "order_id" } };
    const yaml = config.flows.order_payment_flow;
    expect(resolveSchedule("order_payment_flow", code, yaml)).toBeUndefined();
    expect(resolveSchedule("order_payment_flow", code, {})).toMatchObject({ cron: "0 2 * * *" });
    expect(overridden("maxConcurrentRuns", code, yaml)).toBeNull();
    expect(overridden("concurrency", code, yaml)).toBeNull();
    expect(overridden("maxConcurrentRuns", code, {})).toBe(3);
    expect(refusal("flows:\n  order_payment_flow: { overlap: null }\n").message).toMatch(
      /flows\.order_payment_flow\.overlap: .*; only schedule, max_concurrent_runs, concurrency may be null \(the flow then has none/,
    );
  });

  it("refuses a value of the wrong type, at its line", () => {
    const error = refusal(["tasks:", "  create_invoice: { retries: many }"].join("\n"));
    expect(error.line).toBe(2);
    expect(error.key).toBe("tasks.create_invoice.retries");
  });

  it("says what a webhook's url must be: an http or https URL", () => {
    for (const url of ["hooks.example.com/ax", "ftp://hooks.example.com/ax"]) {
      expect(refusal(`alerts: { ops: { sinks: [{ type: webhook, url: "${url}" }] } }`).message).toMatch(
        /alerts\.ops\.sinks\.0\.url: must be an http or https URL, e\.g\. https:\/\/hooks\.example\.com\/ax$/,
      );
    }
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

  it("says in its own words that a section is left empty or is a list, and that a file holds two documents", () => {
    for (const section of ["tasks", "flows", "pools"]) {
      expect(refusal(`${section}:\n`).message).toMatch(new RegExp(`:1:1: ${section}: expected a map \\(name: value entries\\), got null$`));
      expect(refusal(`${section}:\n  - a\n`).message).toMatch(
        new RegExp(`${section}: expected a map \\(name: value entries\\), got a list$`),
      );
    }
    expect(refusal("max_concurrency: 3\n---\npools: { db: 2 }\n")).toMatchObject({
      line: 2,
      message:
        "config/runtime.yaml:2:1: the file holds more than one YAML document (a `---` line after content); runtime.yaml is one document: remove the `---` and merge the parts",
    });
  });

  it("refuses a sink value that is the mask the API shows, on new text only: a stored version still parses", () => {
    const text = [
      "alerts:",
      "  ops:",
      "    sinks:",
      '      - { type: webhook, url: "https://hooks.example.com/[redacted]", secret: "[redacted]", headers: { X-Team: "[redacted]", X-Env: prod } }',
      "      - { type: webhook, url: https://other.example.com/ax, secret_env: OPS_SECRET }",
    ].join("\n");
    const lines = refusal(text).message.split("\n");
    expect(lines.map((line) => line.split(": ")[1])).toEqual([
      "alerts.ops.sinks.0.url",
      "alerts.ops.sinks.0.secret",
      "alerts.ops.sinks.0.headers.X-Team",
    ]);
    expect(lines[0]).toMatch(
      /^config\/runtime\.yaml:4:\d+: alerts\.ops\.sinks\.0\.url: is "\[redacted\]", the mask the API and the console show/,
    );
    expect(lines[0]).toContain("`ax config rollback <version>` stores an earlier version again with its real values");
    expect(parseRuntimeConfig(text, "stored.yaml").alerts.ops?.sinks).toHaveLength(2);
  });

  it("points at an alias used before (or without) its anchor", () => {
    const error = refusal(["tasks:", "  create_invoice:", "    retries: *three", "  notify: { retries: &three 3 }"].join("\n"));
    expect(error).toMatchObject({ line: 3, column: 14 });
    expect(error.message).toMatch(
      /^config\/runtime\.yaml:3:14: YAML: Unresolved alias .*Write the value out instead of using that alias\.$/,
    );
  });
});
