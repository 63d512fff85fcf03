import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { Flow } from "ax-scheduler";
import { AxEntryError } from "./errors.js";

function isFlow(value: unknown): value is Flow {
  return !!value && typeof value === "object" && "dag" in value && "tasks" in value && (value as Flow).tasks instanceof Map;
}

const TYPESCRIPT_ENTRY = /\.(ts|mts|cts|tsx)$/;
let typescriptLoaded = import.meta.url.endsWith(".ts");

/**
 * The installed CLI is JavaScript; tsx is registered only for an entry written in TypeScript, so
 * a JavaScript project pays nothing for it. Running from the sources, tsx is already registered.
 */
async function loadTypeScript(entry: string): Promise<void> {
  if (typescriptLoaded || !TYPESCRIPT_ENTRY.test(entry)) return;
  const { register } = await import("tsx/esm/api");
  register();
  typescriptLoaded = true;
}

/** Imports the user's entry module and collects every flow it exports (directly or in an array). */
export async function loadFlows(entry: string): Promise<Flow<any>[]> {
  const path = resolve(entry);
  // A missing file would otherwise surface as Node's loader error, naming the CLI's own files.
  if (!existsSync(path)) {
    throw new AxEntryError(`no entry module at ${path}: give the path of the module that exports your flows (ax.flow(...))`);
  }
  await loadTypeScript(entry);
  const module = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
  const found = new Map<string, Flow<any>>();
  for (const value of Object.values(module)) {
    for (const candidate of Array.isArray(value) ? value : [value]) {
      if (isFlow(candidate)) found.set(candidate.name, candidate);
    }
  }
  if (found.size === 0) {
    throw new AxEntryError(`${entry} exports no flows: export the values returned by ax.flow(...) (or an array of them)`);
  }
  return [...found.values()];
}
