import type { FailurePolicies, FailurePolicy } from "@ax/coordinator";
import { listCodeOptions, type Db } from "@ax/store";
import type { RuntimeConfig } from "./config/runtime-config.js";
import { resolveTaskOptions, type TaskOverrides } from "./options.js";

/**
 * How the reconciler counts the failure of a node no live worker serves: by its task's options as
 * a worker would resolve them, this process's config version over the options the task's code
 * registered (that code may run nowhere any more), so that a `notify_only` task set in YAML or in
 * code leaves its run going and its alerts reach its `alert_group`.
 */
export function failurePolicies(db: Db, config: () => RuntimeConfig): FailurePolicies {
  return async (tasks) => {
    const code = new Map((await listCodeOptions(db)).filter((row) => row.kind === "task").map((row) => [row.name, row.options]));
    const policies = new Map<string, FailurePolicy>();
    for (const task of tasks) {
      // Only the two options read here: the stored code options hold a key function as its name alone.
      const { onFailure, alertGroup } = code.get(task) ?? {};
      const options = resolveTaskOptions(task, { onFailure, alertGroup } as TaskOverrides, config().tasks[task]);
      policies.set(task, { blocking: options.onFailure === "fail", alertGroup: options.alertGroup ?? undefined });
    }
    return policies;
  };
}
