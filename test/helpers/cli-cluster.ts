import type { Client, Flow, Runtime } from "ax-scheduler";
import type { Isolated } from "./isolated.js";
import { startAx, type Child } from "./processes.js";
import { testRuntime } from "./runtime.js";

/** Two `ax worker` processes started with the real CLI, and a coordinator Runtime in the test process that triggers. */
export interface CliCluster {
  workers: Child[];
  coordinator: Runtime;
  client: Client;
  stop(): Promise<void>;
}

export async function startCliCluster(env: Isolated, entry: string, flows: Flow<any>[], flags: string[] = []): Promise<CliCluster> {
  const args = ["worker", entry, "--storage", env.storage, "--prefix", env.prefix, "--concurrency", "10", ...flags];
  const workers = [0, 1].map(() => startAx(args, { AX_LOG_LEVEL: "info" }));
  const coordinator = testRuntime(env, { flows, roles: ["coordinator"] });
  await coordinator.start();
  await Promise.all(workers.map((w) => w.waitFor(/ax worker started/, 50_000)));
  return {
    workers,
    coordinator,
    client: coordinator.client(),
    async stop() {
      await Promise.all(workers.map((w) => w.stop()));
      await coordinator.stop();
    },
  };
}
