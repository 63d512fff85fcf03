import { fileURLToPath, pathToFileURL } from "node:url";
import { recordTaskDefinition, type ResolvedTaskOptions } from "@ax/worker";
import { formatIssues } from "../option-checks.js";
import { matcherName, resolveTaskOptions, taskOptionsSchema, type TaskOptions, type TaskOverrides } from "../options.js";
import { currentBuilder } from "./flow-builder.js";
import type { Ref, RefArgs } from "./ref.js";
import { AxDefinitionError } from "@ax/common";

/**
 * What a value of type `T` is once stored and read back, as JSON.stringify writes it: a `Date`
 * (or any class with `toJSON`) is what `toJSON` returns, a `Date` an ISO string.
 */
export type Stored<T> = T extends { toJSON(...args: never[]): infer J }
  ? Stored<J>
  : T extends readonly (infer U)[]
    ? Stored<U>[]
    : T extends object
      ? { [K in keyof T]: Stored<T[K]> }
      : T;

/**
 * A task: call it inside a flow body to add a node (it returns a Ref to the result);
 * `task.run(...)` calls the function directly, for unit tests.
 */
export interface Task<A extends unknown[], R> {
  /** The Ref's type is the result as the downstream task receives it: stored as JSON (a `Date` arrives as its ISO string). */
  (...args: RefArgs<A>): Ref<Stored<Awaited<R>>>;
  readonly taskName: string;
  /** Effective options from code (YAML overrides are applied by the Runtime). */
  readonly options: ResolvedTaskOptions;
  /** The options as written in code, before defaults. */
  readonly codeOptions: TaskOverrides;
  readonly fn: (...args: A) => R;
  /** The module that called `ax.task()`: thread and process executors import it to find `fn`. */
  readonly moduleUrl: string | undefined;
  run(...args: A): Promise<Awaited<R>>;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyTask = Task<any[], unknown>;

const THIS_FILE = fileURLToPath(import.meta.url);

/** The file URL of the module that called `ax.task()`, read from the call stack. */
function callerModuleUrl(): string | undefined {
  const previous = Error.prepareStackTrace;
  try {
    Error.prepareStackTrace = (_error, sites) => sites;
    const sites = new Error().stack as unknown as NodeJS.CallSite[];
    for (const site of sites) {
      const file = site.getFileName();
      if (!file || file.startsWith("node:")) continue;
      // Under ESM the name is a file URL; under transpiling runners (vitest) a plain path.
      const path = file.startsWith("file:") ? fileURLToPath(file) : file;
      if (path !== THIS_FILE) return pathToFileURL(path).href;
    }
    return undefined;
  } finally {
    Error.prepareStackTrace = previous;
  }
}

export function defineTask<A extends unknown[], R>(options: TaskOptions, fn: (...args: A) => R): Task<A, R> {
  const parsed = taskOptionsSchema.safeParse(options);
  if (!parsed.success) {
    const name = typeof options?.name === "string" ? `"${options.name}"` : "(unnamed)";
    throw new AxDefinitionError(`task ${name} has invalid options: ${formatIssues(parsed.error, Object.keys(taskOptionsSchema.shape))}`);
  }
  if (typeof fn !== "function") throw new AxDefinitionError(`task "${options.name}" needs a function as its second argument`);
  const { name, ...code } = parsed.data;
  const both = (code.noRetryOn ?? []).find((m) => (code.retryOn ?? []).some((r) => matcherName(r) === matcherName(m)));
  if (both) {
    throw new AxDefinitionError(
      `task "${name}" has ${matcherName(both)} in both retryOn and noRetryOn; noRetryOn would win, so remove it from one of them`,
    );
  }
  const moduleUrl = callerModuleUrl();
  recordTaskDefinition(name, fn as (...args: never[]) => unknown, moduleUrl);
  const task = ((...args: unknown[]) => {
    const builder = currentBuilder();
    if (!builder) {
      throw new AxDefinitionError(
        `task "${name}" was called outside a flow body. Call it inside ax.flow(...) to add it to a flow, or use ${name}.run(...) to call the function directly.`,
      );
    }
    return builder.addNode(task as AnyTask, args);
  }) as Task<A, R>;
  Object.defineProperties(task, {
    taskName: { value: name },
    options: { value: resolveTaskOptions(name, code) },
    codeOptions: { value: code },
    fn: { value: fn },
    moduleUrl: { value: moduleUrl },
    run: {
      // Synchronous refusal: an async one would reject a promise the flow body drops.
      value: (...args: A) => {
        const builder = currentBuilder();
        if (builder) {
          throw new AxDefinitionError(
            `${name}.run(...) was called in the body of flow "${builder.flow}", which only declares the graph and runs when the flow is defined, not per run; call ${name}(...) to add it as a node, or call ${name}.run(...) outside ax.flow(...)`,
          );
        }
        return (async () => await fn(...args))();
      },
    },
  });
  return task;
}
