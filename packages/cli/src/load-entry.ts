import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { Flow } from "ax-scheduler";

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
  await loadTypeScript(entry);
  const module = (await import(pathToFileURL(resolve(entry)).href)) as Record<string, unknown>;
  const found = new Map<string, Flow<any>>();
  for (const value of Object.values(module)) {
    for (const candidate of Array.isArray(value) ? value : [value]) {
      if (isFlow(candidate)) found.set(candidate.name, candidate);
    }
  }
  if (found.size === 0) {
    throw new Error(`${entry} exports no flows: export the values returned by ax.flow(...) (or an array of them)`);
  }
  return [...found.values()];
}
