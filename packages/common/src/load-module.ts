import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/** Files Node reads as CommonJS whatever their package says. */
const COMMONJS_FILE = /\.c[jt]s$/;
const ESM_FILE = /\.m[jt]s$/;
const TYPESCRIPT_FILE = /\.(ts|mts|cts|tsx)$/;
const JAVASCRIPT_FILE = /\.m?js$/;

// Running from the repository's sources this module is TypeScript itself, so tsx is already in place.
let typescriptRegistered = import.meta.url.endsWith(".ts");
const prepared = new Set<string>();

/**
 * Loads a user's module (an `ax` entry, a task's module in an executor's child) by its file URL.
 * An explicitly CommonJS one (`.cjs`, `.cts`) is required, its exports as `default`: imported,
 * Node's ESM loader and tsx's hooks each take a part of it and fail ("request for './ax.js' is not
 * in cache").
 *
 * tsx's hooks are registered only for a TypeScript module, so a JavaScript project pays nothing for
 * them. Every module loaded after them goes through them, which doubles what loading ax itself
 * costs (0.8 s of CPU against 1.6 s here), so an ES module's ax-scheduler is loaded first, by
 * Node alone: the module's own `import` then finds it loaded.
 */
export async function loadModule(url: string): Promise<Record<string, unknown>> {
  const path = fileURLToPath(url);
  if (!prepared.has(url)) {
    if (!isCommonJs(path)) await preloadSdk(url);
    await registerTypeScriptFor(path);
    prepared.add(url);
  }
  if (COMMONJS_FILE.test(path)) return { default: createRequire(url)(path) as unknown };
  return (await import(url)) as Record<string, unknown>;
}

async function registerTypeScriptFor(path: string): Promise<void> {
  if (typescriptRegistered || !TYPESCRIPT_FILE.test(path)) return;
  // Both hooks: a `.ts` module of a package without "type": "module" is CommonJS.
  const [esm, cjs] = await Promise.all([import("tsx/esm/api"), import("tsx/cjs/api")]);
  esm.register();
  cjs.register();
  typescriptRegistered = true;
}

/**
 * The ax-scheduler that `url` would import, loaded now. Resolved as `require` would resolve it,
 * which finds the same file: the package's exports name one file for `import` and `require`. A
 * module that does not reach ax-scheduler by that name, or reaches its TypeScript sources, loads
 * it its own way when it runs.
 */
async function preloadSdk(url: string): Promise<void> {
  let sdk: string;
  try {
    sdk = createRequire(url).resolve("ax-scheduler");
  } catch {
    return;
  }
  if (JAVASCRIPT_FILE.test(sdk)) await import(pathToFileURL(sdk).href);
}

/**
 * Whether Node (or tsx) reads the file as CommonJS: by its extension, else by the nearest
 * package.json's "type". tsx turns such a module's `import`s into `require`s, which load ax again
 * as CommonJS: an ES module preloaded would not serve them.
 */
function isCommonJs(path: string): boolean {
  if (COMMONJS_FILE.test(path)) return true;
  if (ESM_FILE.test(path)) return false;
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    const manifest = join(dir, "package.json");
    if (existsSync(manifest)) return (JSON.parse(readFileSync(manifest, "utf8")) as { type?: unknown }).type !== "module";
    if (dirname(dir) === dir) return true;
  }
}
