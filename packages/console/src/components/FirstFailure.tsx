import { fill, useI18n } from "../i18n";
import type { TaskRunInfo } from "../types";

/** When a node ended: its own finish, else its last attempt's. */
const endedAt = (n: TaskRunInfo) => Date.parse(n.finishedAt ?? n.attempts.at(-1)?.finishedAt ?? "") || Number.POSITIVE_INFINITY;

/** The nodes that failed, first to fail first. */
function failedInOrder(tasks: TaskRunInfo[]): TaskRunInfo[] {
  return tasks.filter((n) => n.status === "failed").sort((a, b) => endedAt(a) - endedAt(b));
}

/** A message's first line, cut short: the whole of it (and the stack) is in the node's panel. */
const brief = (message: string) => {
  const line = message.split("\n")[0] ?? "";
  return line.length > 300 || line !== message ? `${line.slice(0, 300)}…` : line;
};

/**
 * Why the run failed, at the top of its page: the first node whose failure fails the run (a button
 * opening its panel) and its error. While the run goes on (`ongoing`), such a node has had its last
 * attempt (a node that will try again is `retrying`), so the run will end failed. Nodes whose task
 * is `onFailure: notify_only` do not decide the outcome: when only they failed, the line says so in
 * a milder tone, on a finished run as on a running one.
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
  const failed = failedInOrder(tasks);
  const blocking = failed.filter((n) => !n.error?.notifyOnly);
  const shown = blocking.length > 0 ? blocking : failed;
  const node = shown[0];
  if (!node) return null;
  const noticeOnly = blocking.length === 0;
  const lead = noticeOnly
    ? shown.length === 1
      ? t("run.notifyOnlyOne")
      : fill(t("run.notifyOnlyMany"), { n: shown.length })
    : !ongoing
      ? t("run.failedAt")
      : shown.length === 1
        ? t("run.failingOne")
        : fill(t("run.failingMany"), { n: shown.length });
  const error = node.error ?? node.attempts.at(-1)?.error;
  // The panel opens under the graph, out of sight on a phone: it is brought into view.
  const open = (key: string) => {
    onSelect(key);
    requestAnimationFrame(() => document.querySelector(`[data-panel="${CSS.escape(key)}"]`)?.scrollIntoView({ block: "nearest" }));
  };
  return (
    <div
      className={noticeOnly ? "first-failure notice-only" : "first-failure"}
      data-testid="first-failure"
      data-node={node.key}
      data-ongoing={ongoing || undefined}
      data-notify-only={noticeOnly || undefined}
    >
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
      {ongoing && !noticeOnly && <p className="ff-outlook">{t("run.failingOutlook")}</p>}
    </div>
  );
}
