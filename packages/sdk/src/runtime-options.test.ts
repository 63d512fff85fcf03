import { describe, expect, it } from "vitest";
import { AxConfigError } from "@ax/common";
import { ax } from "./ax.js";
import { Runtime } from "./runtime.js";
import type { RuntimeOptions } from "./runtime-options.js";

const task = ax.task({ name: "runtime_options_task" }, () => null);
const flow = ax.flow({ name: "runtime_options_flow" }, () => {
  task();
});

function refusal(options: Record<string, unknown>): string {
  try {
    new Runtime({ flows: [flow], ...options } as RuntimeOptions);
  } catch (error) {
    expect(error).toBeInstanceOf(AxConfigError);
    return (error as Error).message;
  }
  throw new Error(`Runtime accepted ${JSON.stringify(options)}`);
}

describe("Runtime options", () => {
  it("refuses a maxConcurrency the worker could never use, naming the option and the value", () => {
    expect(refusal({ maxConcurrency: 0 })).toBe("Runtime options: maxConcurrency must be a whole number at least 1, got 0");
    expect(refusal({ maxConcurrency: -1 })).toContain("maxConcurrency must be a whole number at least 1, got -1");
    expect(refusal({ maxConcurrency: 1.5 })).toContain("maxConcurrency must be a whole number at least 1, got 1.5");
    expect(refusal({ maxConcurrency: "abc" })).toContain('maxConcurrency must be a whole number at least 1, got "abc"');
    expect(refusal({ maxConcurrency: Number.NaN })).toContain("got NaN");
  });

  it("checks every option, nested ones by their path, and lists every problem at once", () => {
    expect(refusal({ flows: [] })).toContain("flows needs at least one flow made by ax.flow(…)");
    expect(refusal({ flows: [{ name: "x" }] })).toContain("flows.0 must be a flow made by ax.flow(…), got an object");
    // A task where a flow belongs, or any function: named, never quoted as source code.
    expect(refusal({ flows: [ax.task({ name: "not_a_flow" }, () => 1)] })).toMatch(
      /flows\.0 must be a flow made by ax\.flow\(…\), got task "not_a_flow" \(made by ax\.task\)$/m,
    );
    expect(refusal({ flows: [() => "x"] })).toMatch(/flows\.0 must be a flow made by ax\.flow\(…\), got a function$/m);
    expect(refusal({ roles: ["workers"] })).toContain('roles.0 must be one of coordinator, worker, api, got "workers"');
    expect(refusal({ roles: [] })).toContain("roles needs at least one of coordinator, worker, api");
    expect(refusal({ port: 70000 })).toContain("port must be a whole number from 0 to 65535, got 70000");
    expect(refusal({ metricsPort: -1 })).toContain("metricsPort must be a whole number from 0 to 65535");
    expect(refusal({ configPollMs: 0 })).toContain("configPollMs must be a whole number at least 1, got 0");
    expect(refusal({ storage: "mysql://db/x" })).toContain("storage must be a postgres:// or postgresql:// URL");
    expect(refusal({ redis: "http://user:secret@r" })).toMatch(/redis must be a redis:\/\/, rediss:\/\/ or redis\+sentinel:\/\/ URL$/);
    expect(refusal({ redis: "http://user:secret@r" })).not.toContain("secret");
    expect(refusal({ queues: "heavy" })).toContain('queues must be an array of queue names, got "heavy"');
    expect(refusal({ queues: ["heavy", "bad queue!"] })).toContain('queues.1 use letters, digits, _ and -, got "bad queue!"');
    expect(refusal({ configFileWins: "yes" })).toContain('configFileWins must be true or false, got "yes"');
    expect(refusal({ insecureNoAuth: "yes" })).toContain('insecureNoAuth must be true or false, got "yes"');
    expect(refusal({ logLevel: "loud" })).toContain(
      'logLevel must be a pino level (fatal, error, warn, info, debug, trace, silent), got "loud"',
    );
    expect(refusal({ worker: { heartbeatMs: 0, durability: "disk" } })).toBe(
      'Runtime options: worker.heartbeatMs must be a whole number at least 1, got 0; worker.durability must be "run" or "step", got "disk"',
    );
    expect(refusal({ reconciler: { intervalMs: -5 } })).toContain("reconciler.intervalMs must be a whole number at least 1, got -5");
    expect(refusal({ retention: { batch: 0 } })).toContain("retention.batch must be a whole number at least 1, got 0");
    expect(refusal({ admission: { intervalMs: "fast" } })).toContain('admission.intervalMs must be a whole number at least 1, got "fast"');
    expect(refusal({ alerts: 5 })).toContain("alerts must be an object, got 5");
    expect(refusal({ metrics: { stuckAfterMs: 0 } })).toContain("metrics.stuckAfterMs must be a whole number at least 1, got 0");
  });

  it("refuses an option it does not know, naming the one meant when it is another spelling of a known one", () => {
    expect(refusal({ max_concurrency: 10 })).toBe("Runtime options: max_concurrency: unknown option; did you mean maxConcurrency?");
    expect(refusal({ MaxConcurrency: 10 })).toContain("did you mean maxConcurrency?");
    expect(refusal({ metricPort: 9464 })).toContain("metricPort: unknown option; did you mean metricsPort?");
    expect(refusal({ executor: "threadpool" })).toMatch(
      /^Runtime options: executor: unknown option; the options here are storage, .*flows, .*worker$/,
    );
    expect(refusal({ worker: { heartbeat_ms: 500 }, reconciler: { interval: 5 } })).toBe(
      "Runtime options: reconciler.interval: unknown option; did you mean intervalMs?; worker.heartbeat_ms: unknown option; did you mean heartbeatMs?",
    );
    expect(refusal({ alerts: { stuck_scan_ms: 1 }, retention: { every: 1 }, admission: { interval_ms: 1 } })).toBe(
      "Runtime options: admission.interval_ms: unknown option; did you mean intervalMs?; alerts.stuck_scan_ms: unknown option; did you mean stuckScanMs?; retention.every: unknown option; the options here are intervalMs, batch, pauseMs",
    );
  });

  it("accepts every option at a sensible value, connecting to nothing until start()", () => {
    expect(
      () =>
        new Runtime({
          flows: [flow],
          storage: "postgres://postgres@127.0.0.1:5432/test?schema=x",
          redis: "redis+sentinel://127.0.0.1:26379/main",
          prefix: "{ax}",
          config: "config/runtime.yaml",
          maxConcurrency: 1,
          configPollMs: 500,
          roles: ["worker"],
          queues: ["default", "heavy"],
          port: 0,
          host: "0.0.0.0",
          metricsPort: 9464,
          insecureNoAuth: false,
          metricsAuth: true,
          redact: ["*.card"],
          logLevel: "silent",
          reconciler: { intervalMs: 500, staleMs: 0, leaseMs: 3000, batch: 10, recheckMs: 0, remember: 0, unknownTaskGraceMs: 0 },
          admission: { intervalMs: 100 },
          alerts: { stuckScanMs: 1000 },
          metrics: { stuckAfterMs: 600_000 },
          retention: { intervalMs: 60_000, batch: 100, pauseMs: 0 },
          worker: {
            heartbeatMs: 500,
            leaseMs: 3000,
            lockDurationMs: 3000,
            stalledIntervalMs: 1000,
            deadWorkerRetentionMs: 0,
            durability: "step",
          },
        }),
    ).not.toThrow();
  });
});
