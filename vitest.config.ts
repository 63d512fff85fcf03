import { defineConfig } from "vitest/config";

// In the test processes, workspace packages resolve to their TypeScript sources through the
// `development` export condition: Vite's default conditions include it in test mode and vitest
// gives them to its processes as `--conditions`, which the executors' threads and child processes
// inherit. Other processes a test starts (`ax` commands, worker fixtures) run the packages' build,
// as an installed ax does, and fresh-build.ts brings it up to date before any test runs.
export default defineConfig({
  test: {
    reporters: ["default", "./test/helpers/pass-fail-reporter.ts"],
    globalSetup: ["./test/helpers/fresh-build.ts", "./test/helpers/catalog-vacuum.ts"],
    include: ["packages/*/src/**/*.test.ts", "test/integration/**/*.test.ts", "test/browser/**/*.test.ts", "examples/*/**/*.test.ts"],
    exclude: ["**/node_modules/**", "test/bench/**"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Each file gets its own schema and Redis prefix, so files run in parallel. Three at once on
    // this 2-core machine: most files wait on timers, processes and the servers, and a slow day
    // took 735 s with two against 605 s with three; four took as long as three (800 s and 805 s
    // on one day), with every test slower.
    pool: "forks",
    poolOptions: { forks: { maxForks: 3, minForks: 1 } },
    env: { AX_LOG_LEVEL: "error" },
  },
});
