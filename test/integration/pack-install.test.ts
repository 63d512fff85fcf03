import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { copyFile, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isolate } from "../helpers/isolated.js";
import { REPO_ROOT, startChild, type Child } from "../helpers/processes.js";

const run = promisify(execFile);
const PNPM = ["-y", "pnpm@9.15.9"];
/** Every package a user installs: ax-scheduler and the CLI, with the internal packages they depend on at the same version. */
const PUBLISHED = ["common", "store", "coordinator", "worker", "console", "server", "sdk", "cli"];
const FIXTURES = join(REPO_ROOT, "test/fixtures/packed");

/** Without the repository's `development` condition: the installed packages must stand on their build. */
function plainEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return { ...process.env, NODE_OPTIONS: "", ...extra };
}

const env = isolate("packed");
let project: string;
let runtime: Child | undefined;

// Packing the build (vitest's global setup has brought it up to date) and an npm install of the
// third-party dependencies: 20 s alone, 100-165 s when the suite's first, heaviest files share the
// two cores with it on a slow day (an empty npm cache adds the downloads).
beforeAll(async () => {
  const started = Date.now();
  project = await mkdtemp(join(tmpdir(), "ax-packed-"));
  const tarballs = join(project, "tarballs");
  // One pnpm that packs each package (with the `pnpm` that `exec` finds beside itself) instead of
  // one `npx pnpm` per package: npx spends about 2.5 s of CPU resolving pnpm every time it starts.
  const filters = PUBLISHED.flatMap((pkg) => ["--filter", `./packages/${pkg}`]);
  await run("npx", [...PNPM, ...filters, "exec", "pnpm", "pack", "--pack-destination", tarballs], { cwd: REPO_ROOT, env: plainEnv() });
  await writeFile(join(project, "package.json"), JSON.stringify({ name: "packed-consumer", private: true, type: "module" }));
  for (const file of await readdir(FIXTURES)) await copyFile(join(FIXTURES, file), join(project, file));
  const files = (await readdir(tarballs)).map((file) => join(tarballs, file));
  const packed = Date.now();
  await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error", ...files], {
    cwd: project,
    env: plainEnv(),
  });
  console.log(`pack-install: pack ${packed - started} ms, npm install ${Date.now() - packed} ms`);
}, 300_000);

afterAll(async () => {
  await runtime?.stop();
  await env.cleanup();
  if (project) await rm(project, { recursive: true, force: true });
});

describe("the packed packages in a plain Node project", () => {
  it("ships JavaScript and declarations, no TypeScript source", async () => {
    const sdk = join(project, "node_modules/ax-scheduler");
    expect(existsSync(join(sdk, "dist/index.js"))).toBe(true);
    expect(existsSync(join(sdk, "dist/index.d.ts"))).toBe(true);
    expect(existsSync(join(sdk, "src"))).toBe(false);
    const manifest = JSON.parse(await readFile(join(sdk, "package.json"), "utf8")) as {
      version: string;
      dependencies: Record<string, string>;
    };
    // pnpm pack turns workspace:* into the exact shared version.
    expect(manifest.dependencies["@ax/common"]).toBe(manifest.version);
  });

  it("resolves under the `development` condition too, as vitest and other tools set it", async () => {
    // The repository's own `development` exports point at TypeScript sources a tarball does not ship.
    for (const pkg of ["ax-scheduler", "@ax/common", "@ax/store", "@ax/coordinator", "@ax/worker", "@ax/server", "@ax/cli"]) {
      const manifest = await readFile(join(project, "node_modules", pkg, "package.json"), "utf8");
      expect(manifest, pkg).not.toContain('"development"');
    }
    const { stdout } = await run(
      process.execPath,
      [
        "--conditions=development",
        "--input-type=module",
        "-e",
        'const { ax } = await import("ax-scheduler"); await import("ax-scheduler/client"); console.log(typeof ax.task)',
      ],
      { cwd: project, env: plainEnv() },
    );
    expect(stdout.trim()).toBe("function");
  });

  it("runs a flow with worker and coordinator under plain node, and a producer triggers through the client entry alone", async () => {
    const connection = { AX_STORAGE: env.storage, AX_REDIS: env.redis, AX_PREFIX: env.prefix };
    runtime = startChild(process.execPath, [join(project, "runtime.mjs")], plainEnv(connection));
    await runtime.waitFor(/runtime run success/, 90_000);

    const moduleLog = join(project, "producer-modules.log");
    const { stdout } = await run(process.execPath, ["--import", "./record-modules.mjs", "producer.mjs"], {
      cwd: project,
      env: plainEnv({ ...connection, AX_MODULE_LOG: moduleLog }),
    });
    const result = JSON.parse(stdout.trim().split("\n").pop()!) as { status: string; commonjs: string[] };
    expect(result.status).toBe("success");

    const loaded = [...(await readFile(moduleLog, "utf8")).split("\n"), ...result.commonjs].filter(Boolean);
    expect(loaded.some((url) => url.includes("/node_modules/ax-scheduler/dist/client-entry.js"))).toBe(true);
    const forbidden = [
      /\/node_modules\/fastify\//,
      /\/node_modules\/@ax\/server\//,
      /\/node_modules\/@ax\/worker\//,
      /\/node_modules\/@ax\/cli\//,
      /\/node_modules\/@ax\/console\//,
      /\/node_modules\/tsx\//,
    ];
    for (const pattern of forbidden) expect(loaded.filter((url) => pattern.test(url))).toEqual([]);
  });

  it("the installed ax command loads a TypeScript entry through tsx and waits for the run", async () => {
    expect(runtime, "the runtime of the previous test serves packed_flow").toBeDefined();
    const { stdout } = await run(
      join(project, "node_modules/.bin/ax"),
      [
        "--storage",
        env.storage,
        "--redis",
        env.redis,
        "--prefix",
        env.prefix,
        "trigger",
        "packed_flow",
        "--payload",
        "4",
        "--entry",
        "flows.ts",
        "--wait",
      ],
      { cwd: project, env: plainEnv() },
    );
    // `--wait` exits non-zero unless the run succeeded; the DAG it prints names both tasks.
    expect(stdout).toContain("packed_describe");
    const [row] = await env.sql<{ business_key: string }>("select business_key from runs where business_key is not null");
    expect(row?.business_key).toBe("n-4");
  });
});
