import { Runtime, type RuntimeOptions } from "ax-scheduler";
import type { Isolated } from "./isolated.js";

/** A Runtime on the test's schema and prefix, tuned for quick recovery, no HTTP port (an API without tokens when asked for one). */
export function testRuntime(env: Isolated, options: Omit<RuntimeOptions, "storage" | "redis" | "prefix">): Runtime {
  return new Runtime({
    storage: env.storage,
    redis: env.redis,
    prefix: env.prefix,
    roles: ["coordinator", "worker"],
    // Tests about the API itself (auth.test.ts) turn authentication back on.
    insecureNoAuth: true,
    // The test runner stops its workers with signals; each test stops its Runtimes itself.
    stopOnSignals: false,
    logLevel: process.env.AX_LOG_LEVEL ?? "warn",
    reconciler: { intervalMs: 500, staleMs: 1000, leaseMs: 3000 },
    worker: { heartbeatMs: 500, leaseMs: 3000, lockDurationMs: 3000, stalledIntervalMs: 1000 },
    ...options,
  });
}
