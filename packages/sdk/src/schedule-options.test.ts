import { describe, expect, it } from "vitest";
import { parseRuntimeConfig } from "./config/runtime-config.js";
import { defineFlow } from "./definition/flow.js";
import { defineTask } from "./definition/task.js";
import { AxConfigError, AxDefinitionError } from "@ax/common";
import { resolveSchedule, type FlowOptions } from "./flow-options.js";

const step = defineTask({ name: "nightly_step" }, () => 1);
const define = (options: Partial<FlowOptions<unknown>>) =>
  defineFlow({ name: "nightly", ...options } as FlowOptions<unknown>, () => step());

function definitionError(options: Partial<FlowOptions<unknown>>): string {
  try {
    define(options);
  } catch (error) {
    expect(error).toBeInstanceOf(AxDefinitionError);
    return (error as Error).message;
  }
  throw new Error("the flow was accepted");
}

function yamlError(flowYaml: string): AxConfigError {
  try {
    parseRuntimeConfig(["max_concurrency: 4", "flows:", `  nightly: ${flowYaml}`].join("\n"), "config/runtime.yaml", {
      tasks: [],
      flows: ["nightly"],
    });
  } catch (error) {
    expect(error).toBeInstanceOf(AxConfigError);
    return error as AxConfigError;
  }
  throw new Error("the config was accepted");
}

describe("schedule options at definition", () => {
  it("accepts 5- and 6-field cron, IANA zones, every overlap and catch-up policy", () => {
    expect(() => define({ schedule: "0 2 * * *", overlap: "cancel_previous", catchUp: "all", maxCatchUp: 5 })).not.toThrow();
    expect(() =>
      define({ schedule: { cron: "*/10 * * * * *", timezone: "Europe/Berlin" }, overlap: "queue", catchUp: "latest" }),
    ).not.toThrow();
  });

  it("refuses a bad cron, an unknown zone, a bad overlap or catchUp, naming the flow and the field", () => {
    expect(definitionError({ schedule: "every day" })).toMatch(/flow "nightly" .*schedule: .*"every day" has 2 fields/);
    expect(definitionError({ schedule: "99 * * * *" })).toMatch(/flow "nightly" .*schedule: .*not a valid cron/);
    expect(definitionError({ schedule: { cron: "0 2 * * *", timezone: "Europe/Atlantis" } })).toMatch(
      /flow "nightly" .*schedule\.timezone: unknown time zone "Europe\/Atlantis"/,
    );
    expect(definitionError({ schedule: "0 2 * * *", overlap: "wait" as never })).toMatch(/flow "nightly" .*overlap/);
    expect(definitionError({ schedule: "0 2 * * *", catchUp: "some" as never })).toMatch(/flow "nightly" .*catchUp/);
    expect(definitionError({ schedule: "0 2 * * *", maxCatchUp: 0 })).toMatch(/flow "nightly" .*maxCatchUp/);
    // An empty cron is said once, a blank one too, neither as "1 fields".
    const empty = definitionError({ schedule: "" });
    expect(empty).toMatch(/schedule: .*at least 1 character/);
    expect(empty).not.toMatch(/fields/);
    expect(definitionError({ schedule: "   " })).toMatch(/schedule: is blank: write a cron such as "0 2 \* \* \*"/);
  });

  it("resolves defaults, YAML winning over code", () => {
    expect(resolveSchedule("nightly", { schedule: "0 2 * * *" })).toEqual({
      flow: "nightly",
      cron: "0 2 * * *",
      timezone: "UTC",
      overlap: "skip",
      catchUp: "none",
      maxCatchUp: 100,
    });
    expect(
      resolveSchedule(
        "nightly",
        { schedule: "0 2 * * *", overlap: "allow" },
        { schedule: { cron: "0 3 * * *", timezone: "Asia/Tokyo" }, catchUp: "latest" },
      ),
    ).toMatchObject({
      cron: "0 3 * * *",
      timezone: "Asia/Tokyo",
      overlap: "allow",
      catchUp: "latest",
    });
    expect(resolveSchedule("nightly", {})).toBeUndefined();
  });
});

describe("schedule options in runtime.yaml", () => {
  it("accepts catch_up and max_catch_up", () => {
    const config = parseRuntimeConfig(
      [
        "flows:",
        '  nightly: { schedule: { cron: "30 2 * * *", timezone: America/New_York }, overlap: cancel_previous, catch_up: all, max_catch_up: 7 }',
      ].join("\n"),
      "config/runtime.yaml",
      { tasks: [], flows: ["nightly"] },
    );
    expect(config.flows.nightly).toMatchObject({ overlap: "cancel_previous", catchUp: "all", maxCatchUp: 7 });
  });

  it("refuses bad cron, unknown zone, bad overlap with file, line, column and key", () => {
    const cron = yamlError('{ schedule: "0 25 * * *" }');
    expect(cron.message).toMatch(/^config\/runtime\.yaml:3:14: flows\.nightly\.schedule: .*not a valid cron/);
    expect(cron).toMatchObject({ line: 3, column: 14 });
    const zone = yamlError('{ schedule: { cron: "0 2 * * *", timezone: Nowhere/City } }');
    expect(zone.message).toMatch(/^config\/runtime\.yaml:3:45: flows\.nightly\.schedule\.timezone: unknown time zone "Nowhere\/City"/);
    expect(yamlError('{ schedule: "0 2 * * *", overlap: sometimes }').key).toBe("flows.nightly.overlap");
    expect(yamlError('{ schedule: "0 2 * * *", catch_up: everything }').key).toBe("flows.nightly.catch_up");
  });
});
