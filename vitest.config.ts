import { defineConfig } from "vitest/config";
import SlowFirstSequencer from "./test/helpers/slow-first-sequencer.js";

/** Vite's `development` condition, which points the workspace packages at their TypeScript sources. */
const withoutDevelopment = (conditions: readonly string[] = []) =>
  conditions.filter((c) => c !== "development" && c !== "development|production");

// The test processes import the workspace packages from their build, as an installed ax does and
// as every process a test starts (`ax` commands, worker fixtures, executors' children) already did:
// Node loads it natively, where vite-node evaluated some 400 TypeScript modules again in each test
// file's fresh process (measured in docs/packaging.md). Vite's default conditions
// include `development` in test mode, and vitest hands the resolved ones to its processes as
// `--conditions`, so the plugin takes it out after vitest added it. Unit tests under
// packages/*/src still import their own package's sources by relative path. fresh-build.ts
// rebuilds a package whose source is newer than its build before any test runs.
export default defineConfig({
  plugins: [
    {
      name: "ax:test-the-build",
      configResolved(config) {
        const ssr = config.ssr.resolve as { conditions?: string[] } | undefined;
        if (ssr) ssr.conditions = withoutDevelopment(ssr.conditions);
        for (const env of Object.values(config.environments)) {
          (env.resolve as { conditions: string[] }).conditions = withoutDevelopment(env.resolve.conditions);
        }
        (config.resolve as { conditions: string[] }).conditions = withoutDevelopment(config.resolve.conditions);
      },
    },
  ],
  test: {
    reporters: ["default", "./test/helpers/pass-fail-reporter.ts"],
    globalSetup: ["./test/helpers/fresh-build.ts", "./test/helpers/catalog-vacuum.ts"],
    exclude: ["**/node_modules/**", "test/bench/**"],
    // A package's build is loaded by Node itself, not inlined by vite-node (which inlines what is
    // outside node_modules, and the workspace packages are linked from packages/).
    server: { deps: { external: [/\/packages\/[^/]+\/dist\//] } },
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // A poll's default second is too short when four files share two cores with a browser and
    // the servers: a console page took longer than that to show its first rows in CI.
    expect: { poll: { timeout: 10_000 } },
    // Each file gets its own schema and Redis prefix, so files run in parallel. Four at once on
    // this 2-core machine: most files wait on timers, processes and the servers, and a slow day
    // took 735 s with two against 605 s with three; four took as long as three on one day (800 s
    // and 805 s), and on a machine twice as slow, where three took 785 s and 870 s, four took 720 s.
    pool: "forks",
    // Each pool reads its options here, not from the project that uses it: forks for the
    // integration project, threads (not isolated) for the unit one.
    poolOptions: { forks: { maxForks: 4, minForks: 1 }, threads: { isolate: false } },
    sequence: { sequencer: SlowFirstSequencer },
    env: { AX_LOG_LEVEL: "error" },
    projects: [
      {
        extends: true,
        test: { name: "integration", include: ["test/integration/**/*.test.ts", "test/browser/**/*.test.ts", "examples/*/**/*.test.ts"] },
      },
      // The packages' unit tests start no Runtime, server or process of their own: they share one
      // thread and its loaded modules instead of a fresh process each, which cost some 40 s of CPU
      // in a run (about 1 s a file to start a process and load vitest and the modules again).
      {
        extends: true,
        test: { name: "unit", include: ["packages/*/src/**/*.test.ts"], pool: "threads" },
      },
    ],
  },
});
