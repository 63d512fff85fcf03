import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { Flow } from "ax-scheduler";
import { loadModule } from "@ax/common";
import { AxEntryError } from "./errors.js";
import { syntaxLocation } from "./syntax-location.js";

function isFlow(value: unknown): value is Flow {
  return !!value && typeof value === "object" && "dag" in value && "tasks" in value && (value as Flow).tasks instanceof Map;
}

/** Imports the user's entry module and collects every flow it exports (directly or in an array). */
export async function loadFlows(entry: string): Promise<Flow<any>[]> {
  const path = resolve(entry);
  // A missing file would otherwise surface as Node's loader error, naming the CLI's own files.
  if (!existsSync(path)) {
    throw new AxEntryError(`no entry module at ${path}: give the path of the module that exports your flows (ax.flow(...))`);
  }
  const module = await importEntry(entry, path);
  const found = new Map<string, Flow<any>>();
  // A CommonJS entry's exports may arrive only as its `default` (Node cannot always list them by name).
  const exported = isFlow(module.default) || !module.default || typeof module.default !== "object" ? [] : Object.values(module.default);
  for (const value of [...Object.values(module), ...exported]) {
    for (const candidate of Array.isArray(value) ? value : [value]) {
      if (isFlow(candidate)) found.set(candidate.name, candidate);
    }
  }
  if (found.size === 0) {
    throw new AxEntryError(`${entry} exports no flows: export the values returned by ax.flow(...) (or an array of them)`);
  }
  return [...found.values()];
}

/**
 * The entry module, or AxEntryError when it cannot be compiled (a syntax error, with its
 * file:line:column) or its own code throws while it loads (the error is kept as `cause`); ax's
 * own errors pass through.
 */
async function importEntry(entry: string, path: string): Promise<Record<string, unknown>> {
  try {
    return await loadModule(pathToFileURL(path).href);
  } catch (error) {
    const e = error as { name?: unknown; message?: unknown };
    // ax's own refusals (a wrong ax.task option) already say what to fix.
    if (typeof e?.name === "string" && e.name.startsWith("Ax")) throw error;
    const message = typeof e?.message === "string" ? e.message : String(error);
    if (error instanceof SyntaxError) {
      const where = await syntaxLocation(error, path);
      throw new AxEntryError(`${entry} could not be compiled: ${where ? `${where}: ` : ""}${message}. Fix it and run the command again.`, {
        cause: error,
      });
    }
    if (e?.name === "TransformError") {
      throw new AxEntryError(
        `${entry} could not be compiled: ${message.replace(/^Transform failed with \d+ errors?:\n/, "")}. Fix it and run the command again.`,
        {
          cause: error,
        },
      );
    }
    throw new AxEntryError(
      `${entry} threw while loading: ${message}. Its own code (or a module it imports) failed at import time, before any flow was read.`,
      {
        cause: error,
      },
    );
  }
}
