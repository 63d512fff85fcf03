import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { Flow } from "ax-scheduler";

function isFlow(value: unknown): value is Flow {
  return !!value && typeof value === "object" && "dag" in value && "tasks" in value && (value as Flow).tasks instanceof Map;
}

/** Imports the user's entry module and collects every flow it exports (directly or in an array). */
export async function loadFlows(entry: string): Promise<Flow<any>[]> {
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
