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

/** Waits until every one of `runtimes` applies config `version`; answers how long that took (ms). */
export async function configAppliedOn(runtimes: Runtime[], version: number, timeoutMs = 5000): Promise<number> {
  const started = Date.now();
  while (runtimes.some((runtime) => runtime.configVersion !== version)) {
    if (Date.now() - started > timeoutMs) throw new Error(`config v${version} was not applied on every process within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return Date.now() - started;
}
