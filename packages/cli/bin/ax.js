#!/usr/bin/env node
// Installed, `@ax/cli/main` is the built JavaScript. In the repository, run with
// `--conditions=development` (as `pnpm ax` does), it is the TypeScript source, which needs tsx.
const main = import.meta.resolve("@ax/cli/main");
if (main.endsWith(".ts")) {
  // Both hooks, as the installed command registers them for a TypeScript entry: an entry of a
  // CommonJS package is loaded through the CommonJS one.
  const [esm, cjs] = await Promise.all([import("tsx/esm/api"), import("tsx/cjs/api")]);
  esm.register();
  cjs.register();
}
// A reader that closes early (`ax backfill … | head -1`) ends the command, as it ends any Unix
// tool, instead of crashing it with an unhandled EPIPE from the progress bar's next write.
process.stdout.on("error", (error) => {
  if (error.code !== "EPIPE") throw error;
  process.exit(process.exitCode ?? 0);
});
const { main: run } = await import(main);
await run(process.argv);
// A failed command (a process command whose start failed included) must end even if a handle lingers.
if (process.exitCode) setTimeout(() => process.exit(), 500).unref();
