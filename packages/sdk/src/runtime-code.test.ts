import { describe, expect, it } from "vitest";
import { ax } from "./ax.js";
import { parseRuntimeConfig } from "./config/runtime-config.js";
import { RuntimeCode } from "./runtime-code.js";

const capped = ax.task({ name: "capped_export", resources: { memoryMb: 64 } }, () => 1);
const flow = ax.flow({ name: "capped_flow" }, () => {
  capped();
});

describe("RuntimeCode.apply", () => {
  it("says when resources are set on a task the inline executor runs, which cannot enforce them, by code or by YAML", () => {
    const code = new RuntimeCode([flow]);
    const unenforced = [
      'task "capped_export" sets resources, but runs on the inline executor, which cannot enforce them: set executor: "thread" or "process" (in code or in runtime.yaml) for hard limits, or leave resources out',
    ];
    expect(code.apply(parseRuntimeConfig("", "runtime.yaml"))).toEqual(unenforced);
    expect(code.apply(parseRuntimeConfig("tasks:\n  capped_export: { executor: thread }\n", "runtime.yaml"))).toEqual([]);
    expect(code.apply(parseRuntimeConfig("tasks:\n  capped_export: { executor: inline }\n", "runtime.yaml"))).toEqual(unenforced);
  });
});
