import { describe, expect, it } from "vitest";
import { durationText, yamlValue } from "./yaml-value.js";

describe("yamlValue", () => {
  it("writes values as runtime.yaml takes them", () => {
    expect(yamlValue("timeout", 30_000)).toBe("30s");
    expect(yamlValue("retry_backoff", 1500)).toBe("1500ms");
    expect(yamlValue("retries", 3)).toBe("3");
    expect(yamlValue("executor", "inline")).toBe('"inline"');
    expect(yamlValue("schedule", null)).toBe("null");
    expect(yamlValue("rate_limit", { max: 5, perMs: 60_000, key: "user_id" })).toBe("{ max: 5, per: 1m, key: user_id }");
    expect(yamlValue("pool", { name: "core_db", slots: 2 })).toBe("{ name: core_db, slots: 2 }");
    expect(yamlValue("resources", { memoryMb: 512 })).toBe("{ memory_mb: 512 }");
    expect(yamlValue("pools", { coreDb: 3 })).toBe("{ coreDb: 3 }");
    expect(yamlValue("schedule", { cron: "0 * * * *", timezone: "Asia/Shanghai" })).toBe('{ cron: "0 * * * *", timezone: Asia/Shanghai }');
    expect(yamlValue("rate_limit", { max: 1, perMs: 1000, key: "true" })).toBe('{ max: 1, per: 1s, key: "true" }');
  });

  it("keeps a duration exact in the largest unit that holds it", () => {
    expect([0, 250, 1000, 90_000, 3_600_000, 172_800_000].map(durationText)).toEqual(["0s", "250ms", "1s", "90s", "1h", "2d"]);
  });
});
