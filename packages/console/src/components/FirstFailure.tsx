import { fill, useI18n } from "../i18n";
import type { TaskRunInfo } from "../types";

/** When a node ended: its own finish, else its last attempt's. */
const endedAt = (n: TaskRunInfo) => Date.parse(n.finishedAt ?? n.attempts.at(-1)?.finishedAt ?? "") || Number.POSITIVE_INFINITY;

/** The node that failed first: where a failed run went wrong, the skips and later failures coming after it. */
function firstFailed(tasks: TaskRunInfo[]): TaskRunInfo | undefined {
  return tasks.filter((n) => n.status === "failed").sort((a, b) => endedAt(a) - endedAt(b))[0];
}

/** A message's first line, cut short: the whole of it (and the stack) is in the node's panel. */
const brief = (message: string) => {
  const line = message.split("\n")[0] ?? "";
  return line.length > 300 || line !== message ? `${line.slice(0, 300)}…` : line;
};

/**
 * Why the run failed, at the top of its page: the first failed node (a button opening its panel) and
 * its error. While the run goes on (`ongoing`), a failed node has had its last attempt (a node that
 * will try again is `retrying`), so the run cannot succeed, unless that node's task is
 * `onFailure: notify_only`, which RunInfo does not say: the note says that much and no more.
 */
export function FirstFailure({
  tasks,
  onSelect,
  ongoing = false,
}: {
  tasks: TaskRunInfo[];
  onSelect: (key: string) => void;
  ongoing?: boolean;
}) {
  const { t } = useI18n();
  const node = firstFailed(tasks);
  if (!node) return null;
  const failed = tasks.filter((n) => n.status === "failed").length;
  const lead = !ongoing ? t("run.failedAt") : failed === 1 ? t("run.failingOne") : fill(t("run.failingMany"), { n: failed });
  const error = node.error ?? node.attempts.at(-1)?.error;
  // The panel opens under the graph, out of sight on a phone: it is brought into view.
  const open = (key: string) => {
    onSelect(key);
    requestAnimationFrame(() => document.querySelector(`[data-panel="${CSS.escape(key)}"]`)?.scrollIntoView({ block: "nearest" }));
  };
  return (
    <div className="first-failure" data-testid="first-failure" data-node={node.key} data-ongoing={ongoing || undefined}>
      {lead}{" "}
      <button type="button" className="link mono" onClick={() => open(node.key)}>
        {node.key}
      </button>
      {error && (
        <span className="ff-error">
          {" · "}
          <strong>{error.name}</strong>: {brief(error.message)}
        </span>
      )}
      {ongoing && <p className="ff-outlook">{t("run.failingOutlook")}</p>}
    </div>
  );
}
