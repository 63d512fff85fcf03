import type { ResolvedTaskOptions } from "@ax/worker";
import { AxDefinitionError } from "../errors.js";
import { formatIssues, resolveTaskOptions, taskOptionsSchema, type TaskOptions, type TaskOverrides } from "../options.js";
import { currentBuilder } from "./flow-builder.js";
import type { Ref, RefArgs } from "./ref.js";

/**
 * A task: call it inside a flow body to add a node (it returns a Ref to the result);
 * `task.run(...)` calls the function directly, for unit tests.
 */
export interface Task<A extends unknown[], R> {
  (...args: RefArgs<A>): Ref<Awaited<R>>;
  readonly taskName: string;
  /** Effective options from code (YAML overrides are applied by the Runtime). */
  readonly options: ResolvedTaskOptions;
  /** The options as written in code, before defaults. */
  readonly codeOptions: TaskOverrides;
  readonly fn: (...args: A) => R;
  run(...args: A): Promise<Awaited<R>>;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyTask = Task<any[], unknown>;

export function defineTask<A extends unknown[], R>(options: TaskOptions, fn: (...args: A) => R): Task<A, R> {
  const parsed = taskOptionsSchema.safeParse(options);
  if (!parsed.success) {
    const name = typeof options?.name === "string" ? `"${options.name}"` : "(unnamed)";
    throw new AxDefinitionError(`task ${name} has invalid options: ${formatIssues(parsed.error)}`);
  }
  if (typeof fn !== "function") throw new AxDefinitionError(`task "${options.name}" needs a function as its second argument`);
  const { name, ...code } = parsed.data;
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
    run: { value: async (...args: A) => await fn(...args) },
  });
  return task;
}
