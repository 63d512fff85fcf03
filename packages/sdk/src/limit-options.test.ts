import { describe, expect, it } from "vitest";
import { parseRuntimeConfig } from "./config/runtime-config.js";
import { defineTask } from "./definition/task.js";
import { AxConfigError, AxDefinitionError } from "@ax/common";
import { resolveTaskOptions, type TaskOptions } from "./options.js";

/** The message `ax.task` refuses `options` with. */
function codeError(options: Partial<TaskOptions>): string {
  try {
    defineTask({ name: "limited_task", ...options } as TaskOptions, () => 1);
  } catch (error) {
    expect(error).toBeInstanceOf(AxDefinitionError);
    return (error as Error).message;
  }
  throw new Error(`ax.task accepted ${JSON.stringify(options)}`);
}

/** The refusal of `tasks.limited_task: <taskYaml>` in runtime.yaml. */
function yamlError(taskYaml: string, pools = "{}"): AxConfigError {
  try {
    parseRuntimeConfig([`pools: ${pools}`, "tasks:", `  limited_task: ${taskYaml}`].join("\n"), "config/runtime.yaml", {
      tasks: ["limited_task"],
      flows: [],
    });
  } catch (error) {
    expect(error).toBeInstanceOf(AxConfigError);
    return error as AxConfigError;
  }
  throw new Error(`runtime.yaml accepted ${taskYaml}`);
}

describe("task limits: a rate that could never admit a start is refused", () => {
  it("refuses per below 1 ms, in code and YAML, saying what per is", () => {
    for (const per of [0, 0.0004, "0ms", "0.4ms"]) {
      expect(codeError({ rateLimit: { max: 2, per } })).toMatch(/rateLimit\.per: must be at least 1ms: .*e\.g\. "1s"/);
    }
    for (const per of ["0", "0.0004", "0ms"]) {
      const error = yamlError(`{ rate_limit: { max: 2, per: ${per} } }`);
      expect(error.message).toMatch(/^config\/runtime\.yaml:3:\d+: tasks\.limited_task\.rate_limit\.per: must be at least 1ms/);
      expect(error.key).toBe("tasks.limited_task.rate_limit.per");
    }
    expect(() => defineTask({ name: "limited_task", rateLimit: { max: 2, per: "1ms" } }, () => 1)).not.toThrow();
  });

  it("refuses max below 1 or not whole, and a missing per, saying what is expected", () => {
    for (const max of [0, -1, 1.5]) {
      expect(codeError({ rateLimit: { max, per: "1s" } })).toMatch(
        /rateLimit\.max: must be a whole number of at least 1 \(starts per window\)/,
      );
    }
    expect(yamlError("{ rate_limit: { max: 2.5, per: 1s } }").message).toMatch(/rate_limit\.max: must be a whole number of at least 1/);
    expect(yamlError("{ rate_limit: { max: 2 } }").message).toMatch(
      /rate_limit\.per: missing \(a duration: seconds as a number or a string/,
    );
    expect(yamlError("{ rate_limit: { max: 2, per: true } }").message).toMatch(/rate_limit\.per: must be a duration: seconds as a number/);
    expect(yamlError("{ rate_limit: 5 }").message).toMatch(/rate_limit: must be \{ max, per, key\? \}/);
  });
});

describe("task limits: concurrency", () => {
  it("refuses a cancelling strategy without a key, in code and YAML", () => {
    for (const strategy of ["cancel_newest", "cancel_in_progress"] as const) {
      expect(codeError({ concurrency: { max: 1, strategy } })).toMatch(
        new RegExp(`concurrency\\.strategy: "${strategy}" needs a key: .*Add key`),
      );
      const error = yamlError(`{ concurrency: { max: 1, strategy: ${strategy} } }`);
      expect(error.key).toBe("tasks.limited_task.concurrency.strategy");
      expect(error.message).toMatch(/needs a key/);
    }
    // Waiting is what a task-wide limit does anyway.
    expect(() => defineTask({ name: "limited_task", concurrency: { max: 1, strategy: "queue" } }, () => 1)).not.toThrow();
  });

  it("says what concurrency and strategy accept instead of 'Invalid input'", () => {
    const expected = /concurrency: must be a whole number of at least 1, or \{ max, key, strategy \}/;
    expect(codeError({ concurrency: "2" as never })).toMatch(expected);
    expect(yamlError("{ concurrency: [1] }").message).toMatch(expected);
    expect(codeError({ concurrency: 1.5 })).toMatch(/concurrency: must be a whole number of at least 1/);
    const error = yamlError("{ concurrency: 1.5 }");
    expect(error.message).toMatch(/^config\/runtime\.yaml:3:19: tasks\.limited_task\.concurrency: must be a whole number of at least 1/);
    expect(yamlError("{ concurrency: { max: 0, key: user_id } }").message).toMatch(
      /concurrency\.max: must be a whole number of at least 1/,
    );

    const strategies = /concurrency\.strategy: must be one of: queue, cancel_in_progress, cancel_newest/;
    expect(codeError({ concurrency: { max: 1, key: "user_id", strategy: "newest" as never } })).toMatch(strategies);
    const bad = yamlError("{ concurrency: { max: 1, key: user_id, strategy: newest } }");
    expect(bad.message).toMatch(strategies);
    expect(bad.key).toBe("tasks.limited_task.concurrency.strategy");
    expect(yamlError("{ concurrency: { max: 1, key: 7 } }").message).toMatch(
      /concurrency\.key: must be a dotted path into the task's input/,
    );
    expect(yamlError("{ concurrency: { max: 1, key: user_id, foo: 1 } }").message).toMatch(/concurrency\.foo: unknown key "foo"/);
  });

  it("says what a pool accepts", () => {
    expect(codeError({ pool: 3 as never })).toMatch(/pool: must be a pool name, or \{ name, slots \}/);
    expect(codeError({ pool: { name: "core_db", slots: 0 } })).toMatch(/pool\.slots: must be a whole number of at least 1/);
  });
});

describe("cluster limits in runtime.yaml", () => {
  it("say that pools and max_concurrency are whole numbers of at least 1", () => {
    const refuse = (text: string) => () => parseRuntimeConfig(text, "config/runtime.yaml");
    expect(refuse("pools: { core_db: 2.5 }")).toThrow(/pools\.core_db: must be a whole number of slots, at least 1/);
    expect(refuse("pools: { core_db: 0 }")).toThrow(/pools\.core_db: must be a whole number of slots, at least 1/);
    expect(refuse("max_concurrency: 1.5")).toThrow(/max_concurrency: must be a whole number of attempts, at least 1/);
  });
});

describe("business keys", () => {
  const keyOf = (key: string | ((...args: never[]) => unknown), input: unknown) =>
    resolveTaskOptions("keyed", { concurrency: { max: 1, key } }).concurrencyKey!.key([input]);

  it("are null for a missing value, from a path or a function", () => {
    expect(keyOf("order.id", {})).toBe("null");
    expect(keyOf("order.id", { order: null })).toBe("null");
    expect(keyOf(() => undefined, {})).toBe("null");
    expect(keyOf(() => null, {})).toBe("null");
    expect(keyOf(() => Symbol("x"), {})).toBe("null");
  });

  it("are the JSON text of an object or array, as PostgreSQL's jsonb writes it, never [object Object]", () => {
    expect(keyOf("order", { order: { id: 1, customer: { name: "ann" } } })).toBe('{"id": 1, "customer": {"name": "ann"}}');
    expect(keyOf("order", { order: { id: 2, customer: { name: "ann" } } })).not.toBe(keyOf("order", { order: { id: 1 } }));
    expect(keyOf((input: { tags: string[] }) => input.tags, { tags: ["a", "b"] })).toBe('["a", "b"]');
    expect(keyOf("k", { k: { bb: 1, a: 2, c: 3 } })).toBe('{"a": 2, "c": 3, "bb": 1}');
  });

  it("read a path as PostgreSQL's #>> does: own keys only, array indexes from either end", () => {
    expect(keyOf("items.0.sku", { items: [{ sku: "s1" }, { sku: "s2" }] })).toBe("s1");
    expect(keyOf("items.-1.sku", { items: [{ sku: "s1" }, { sku: "s2" }] })).toBe("s2");
    expect(keyOf("items.length", { items: [1, 2] })).toBe("null");
    expect(keyOf("order.constructor", { order: {} })).toBe("null");
  });

  it("write numbers with every digit, and other values as JSON would store them", () => {
    expect(keyOf("n", { n: 1e21 })).toBe("1000000000000000000000");
    expect(keyOf("n", { n: -1.5e-7 })).toBe("-0.00000015");
    expect(keyOf("n", { n: 1.25 })).toBe("1.25");
    expect(keyOf(() => 12n, {})).toBe("12");
    expect(keyOf(() => new Date("2024-01-02T03:04:05Z"), {})).toBe("2024-01-02T03:04:05.000Z");
    expect(keyOf(() => true, {})).toBe("true");
  });
});

describe("timeouts that would set no limit", () => {
  it("refuses a timeout or heartbeatTimeout of 0 or under a millisecond, in code and in YAML", () => {
    expect(codeError({ timeout: 0 })).toMatch(/timeout: must be at least 1ms; leave the option unset for no limit/);
    expect(codeError({ heartbeatTimeout: 0.0001 })).toMatch(/heartbeatTimeout: must be at least 1ms/);
    expect(yamlError("{ timeout: 0 }").message).toMatch(/timeout:? must be at least 1ms/);
    expect(yamlError("{ heartbeat_timeout: 0s }").message).toMatch(/heartbeat_timeout:? must be at least 1ms/);
  });
});
