import { afterAll, beforeAll } from "vitest";
import type { Runtime, RuntimeOptions } from "ax-scheduler";
import { isolate, type Isolated } from "./isolated.js";
import { startPrivateRedis, type Child } from "./processes.js";
import { testRuntime } from "./runtime.js";

export interface RuntimeOnPrivateRedis {
  env: Isolated;
  /** The started Runtime (after the suite's beforeAll). */
  runtime(): Runtime;
  /** Shuts its redis-server down, as an outage. */
  redisDown(): Promise<void>;
  /** Starts an empty redis-server on the same port, where the Runtime's clients reconnect. */
  redisBack(): Promise<void>;
}

/**
 * A Runtime on the test's schema and a redis-server of its own, for suites that take Redis away:
 * registers the suite's beforeAll (start) and afterAll (stop, clean up).
 */
export function runtimeOnPrivateRedis(
  label: string,
  options: Omit<RuntimeOptions, "storage" | "redis" | "prefix">,
  stopTimeout = 2,
  /** Runs on the test's schema and Redis before the Runtime starts (creating an API token, say). */
  prepare?: (env: Isolated) => Promise<void>,
): RuntimeOnPrivateRedis {
  const env = isolate(label);
  let server: { url: string; port: number; child: Child } | undefined;
  let runtime: Runtime | undefined;

  beforeAll(async () => {
    server = await startPrivateRedis();
    await prepare?.({ ...env, redis: server.url });
    runtime = testRuntime({ ...env, redis: server.url }, options);
    await runtime.start();
  }, 60_000);

  afterAll(async () => {
    await runtime?.stop({ timeout: stopTimeout });
    await server?.child.stop();
    await env.cleanup();
  });

  return {
    env,
    runtime: () => runtime!,
    redisDown: async () => {
      await server!.child.stop();
    },
    redisBack: async () => {
      server = await startPrivateRedis(server!.port);
    },
  };
}
