import { summary } from "../format";
import { fill, type MessageKey, useI18n } from "../i18n";
import type { RunInfo, TaskRunInfo } from "../types";

/**
 * The upstream nodes a node that never ran is missing results from. Their `result` is null, which
 * would read as a result of null: the input such a node did not get is said to be missing instead.
 */
function missing(task: TaskRunInfo, tasks: TaskRunInfo[]): TaskRunInfo[] {
  if (task.attempts.length > 0 || task.reusedFrom) return [];
  return task.upstream.flatMap((key) => tasks.filter((n) => n.key === key && n.status !== "success"));
}

/** A node's input: the run's payload for a first node, else its upstream nodes' results, by key. */
export function NodeInput({ run, task }: { run: RunInfo; task: TaskRunInfo }) {
  const { t, lang } = useI18n();
  const absent = task.upstream.length === 0 ? [] : missing(task, run.tasks);
  if (absent.length > 0) {
    const final = ["skipped", "cancelled", "failed"].includes(task.status);
    const upstream = absent.map((n) => `${n.key} ${t(`status.${n.status}` as MessageKey)}`).join(lang === "zh" ? "、" : ", ");
    return (
      <p className="input-not-run muted" data-input="not-run">
        {fill(t(final ? "node.inputNotRun" : "node.inputNotYet"), { upstream })}
      </p>
    );
  }
  const input =
    task.upstream.length === 0
      ? run.payload
      : Object.fromEntries(task.upstream.map((u) => [u, run.tasks.find((n) => n.key === u)?.result ?? null]));
  return <pre className="code">{summary(input, 2000)}</pre>;
}
