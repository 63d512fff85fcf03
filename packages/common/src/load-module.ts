import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

/** Files Node reads as CommonJS whatever their package says. */
const COMMONJS_FILE = /\.c[jt]s$/;

/**
 * Loads a user's module (an `ax` entry, a task's module in an executor's child) by its file URL.
 * An explicitly CommonJS one (`.cjs`, `.cts`) is required, its exports as `default`: imported,
 * Node's ESM loader and tsx's hooks each take a part of it and fail ("request for './ax.js' is not
 * in cache").
 */
export async function loadModule(url: string): Promise<Record<string, unknown>> {
  if (COMMONJS_FILE.test(new URL(url).pathname)) return { default: createRequire(url)(fileURLToPath(url)) as unknown };
  return (await import(url)) as Record<string, unknown>;
}
