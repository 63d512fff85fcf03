import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const PNPM = ["-y", "pnpm@9.15.9"];

/** The newest modification time of a file under `dir`, skipping test files (they are not built). */
function newest(dir: string): number {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || /\.test\.tsx?$/.test(entry.name)) continue;
    latest = Math.max(latest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
  }
  return latest;
}

/** Packages whose build is missing or older than their source. */
function staleBuilds(): string[] {
  const packages = join(ROOT, "packages");
  return readdirSync(packages).filter((name) => {
    const dist = join(packages, name, "dist");
    return !existsSync(dist) || newest(join(packages, name, "src")) > newest(dist);
  });
}

/**
 * The test processes and the processes tests start (`ax` commands, worker fixtures) run the
 * packages' build, as an installed ax does: loading the TypeScript sources through tsx costs each
 * of them seconds of CPU, and a run starts hundreds (vitest.config.ts says how the test processes
 * do). So that no test ever runs a stale build, a package whose source changed since its build is
 * built again first (`pnpm test` has just built them all, and this finds nothing to do).
 */
export function setup(): void {
  const stale = staleBuilds();
  if (stale.length === 0) return;
  console.log(`building ${stale.join(", ")}: their source is newer than their build`);
  execFileSync("npx", [...PNPM, "build"], { cwd: ROOT, stdio: "inherit" });
}
