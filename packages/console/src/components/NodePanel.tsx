import { useEffect } from "react";
import { duration, progressText, shortId, summary, waitingDue, waitingFor } from "../format";
import { fill, type MessageKey, useI18n } from "../i18n";
import { Link } from "../router";
import { serverOriginal, serverText } from "../server-reasons";
import type { RunInfo, TaskRunInfo } from "../types";
import { Attempts } from "./Attempts";
import { HeldBy } from "./HeldBy";
import { NodeInput } from "./NodeInput";
import { NodeLogs } from "./NodeLogs";
import { StatusBadge } from "./Status";
import { ActionButton } from "../session";

/**
 * A run's or node's `waitingFor`, a delayed one's due time written as the console writes times, a
 * reason in the console's language (the API's English in the tooltip).
 */
export function Waiting({ text }: { text: string }) {
  const { t, lang } = useI18n();
  const due = waitingDue(text);
  return (
    <span title={due ?? serverOriginal(text, lang)} data-waiting>
      {t("run.waiting")}: {waitingFor(serverText(text, lang), t("run.dueAt"))}
    </span>
  );
}

const NOT_SUCCEEDED = ["failed", "skipped", "cancelled"];

/**
 * Why a node was skipped: the failed or cancelled nodes upstream where the skip began, and the
 * skipped nodes it came through. A skip is passed down the DAG, so the direct upstream is often
 * skipped itself and says nothing.
 */
function skipCause(task: TaskRunInfo, tasks: TaskRunInfo[]): { origins: TaskRunInfo[]; through: TaskRunInfo[] } {
  const byKey = new Map(tasks.map((n) => [n.key, n]));
  const origins = new Map<string, TaskRunInfo>();
  const through = new Map<string, TaskRunInfo>();
  const visit = (key: string) => {
    const up = byKey.get(key);
    if (!up || origins.has(key) || through.has(key) || !NOT_SUCCEEDED.includes(up.status)) return;
    if (up.status !== "skipped") {
      origins.set(key, up);
      return;
    }
    through.set(key, up);
    for (const next of up.upstream) visit(next);
  };
  for (const up of task.upstream) visit(up);
  return { origins: [...origins.values()], through: [...through.values()] };
}

function NodeButton({ node, onSelect }: { node: string; onSelect: (key: string) => void }) {
  return (
    <button type="button" className="link mono" onClick={() => onSelect(node)}>
      {node}
    </button>
  );
}

/** Nodes named in a note, each one a button opening its panel. */
function NodeList({ nodes, onSelect, status }: { nodes: TaskRunInfo[]; onSelect: (key: string) => void; status?: boolean }) {
  const { t, lang } = useI18n();
  return nodes.map((n, i) => (
    <span key={n.key}>
      {i > 0 && MARKS[lang].comma}
      <NodeButton node={n.key} onSelect={onSelect} />
      {status && ` ${t(`status.${n.status}` as MessageKey)}`}
    </span>
  ));
}

/** The punctuation around the nodes a note names: Chinese has its own. */
const MARKS = {
  en: { open: " (", close: ")", stop: ".", comma: ", " },
  zh: { open: "（", close: "）", stop: "。", comma: "、" },
};

function SkipNote({ task, run, onSelect }: { task: TaskRunInfo; run: RunInfo; onSelect: (key: string) => void }) {
  const { t, lang } = useI18n();
  const mark = MARKS[lang];
  const { origins, through } = skipCause(task, run.tasks);
  if (origins.length === 0)
    return (
      <p className="node-note" data-note="skipped">
        {t("node.skipped")}
      </p>
    );
  return (
    <p className="node-note" data-note="skipped">
      {t("node.skippedBecause")} <NodeList nodes={origins} onSelect={onSelect} status />
      {through.length > 0 && (
        <>
          {mark.open}
          {t("node.skippedThrough")} <NodeList nodes={through} onSelect={onSelect} />
          {mark.close}
        </>
      )}
      {mark.stop}
    </p>
  );
}

function ReusedNote({ task }: { task: TaskRunInfo & { reusedFrom: string } }) {
  const { t, lang } = useI18n();
  return (
    <p className="node-note" data-note="reused">
      {t("node.reusedFrom")}{" "}
      <Link to={`/runs/${task.reusedFrom}?node=${encodeURIComponent(task.key)}`} className="mono">
        {shortId(task.reusedFrom)}
      </Link>
      {MARKS[lang].stop}
      {lang === "en" && " "}
      {t("node.reusedElsewhere")}
    </p>
  );
}

/**
 * When a retrying node tries again, and how many attempts it has had. How many it gets in all
 * (its `retries`) is not in the API's RunInfo, so what is left is not said.
 */
function RetryIn({ at, attempts: n, now }: { at: string; attempts: number; now: number }) {
  const { t } = useI18n();
  const left = Date.parse(at) - now;
  return (
    <span data-testid="retry-in">
      {left > 0 ? `${t("node.retryIn")} ${duration(left)}` : t("node.retryDue")} ·{" "}
      {n === 1 ? t("node.attemptsSoFarOne") : fill(t("node.attemptsSoFar"), { n })}
    </span>
  );
}

export function NodePanel({
  run,
  task,
  now,
  onClose,
  onSelect,
  onRerunFrom,
  busy,
}: {
  run: RunInfo;
  task: TaskRunInfo;
  now: number;
  onClose: () => void;
  onSelect: (key: string) => void;
  onRerunFrom: (() => void) | undefined;
  busy: boolean;
}) {
  const { t, lang } = useI18n();
  // Escape closes the panel as it closes a dialog; an open dialog (a confirm, the trigger form) takes its own Escape first.
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (event.key === "Escape" && !event.defaultPrevented && !document.querySelector("dialog[open]")) onClose();
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [onClose]);
  const following = task.status === "running" || task.status === "retrying";
  const reused = task.reusedFrom === null ? undefined : { ...task, reusedFrom: task.reusedFrom };
  return (
    <section className="panel node-panel" data-panel={task.key}>
      <header>
        <h2>
          {task.key} <StatusBadge status={task.reusedFrom ? "reused" : task.status} />
        </h2>
        <div className="actions">
          {onRerunFrom && (
            <ActionButton needs="trigger" className="primary" disabled={busy} onClick={onRerunFrom}>
              {t("run.rerunFrom")}
            </ActionButton>
          )}
          <button type="button" onClick={onClose}>
            {t("close")}
          </button>
        </div>
      </header>
      <div className="meta">
        <span>{task.task}</span>
        <span>
          {t("queue")} {task.queue}
        </span>
        {task.waitingFor && <Waiting text={task.waitingFor} />}
        {task.waitingFor && <HeldBy text={task.waitingFor} flow={run.flow} />}
        {task.nextRetryAt && task.status === "retrying" && <RetryIn at={task.nextRetryAt} attempts={task.attempts.length} now={now} />}
        {task.progress !== null && (
          <span>
            {t("node.progress")} {progressText(task.progress, 80)}
          </span>
        )}
      </div>
      {reused && <ReusedNote task={reused} />}
      {task.status === "skipped" && !reused && <SkipNote task={task} run={run} onSelect={onSelect} />}
      {task.error && task.status !== "running" && (
        <div className={`error-box${task.status === "cancelled" ? " quiet" : ""}`} data-error={task.error.name}>
          <strong>{task.error.name}</strong>: {task.error.message}
          {task.error.notRetried && (
            <p className="not-retried" title={serverOriginal(task.error.notRetried, lang)}>
              {t("node.notRetried")} {serverText(task.error.notRetried, lang)}
            </p>
          )}
          {task.error.stack && <pre>{task.error.stack}</pre>}
        </div>
      )}
      {/* A reused or skipped node's note says why it has no attempts of its own. */}
      {(task.attempts.length > 0 || (!reused && task.status !== "skipped")) && (
        <>
          <h3>{t("node.attempts")}</h3>
          <Attempts task={task} now={now} createdAt={run.createdAt} />
        </>
      )}
      <div className="grid-2">
        <div>
          <h3>{t("node.input")}</h3>
          <NodeInput run={run} task={task} />
        </div>
        <div>
          <h3>{t("node.result")}</h3>
          {/* A node that has not succeeded has no result: null there would read as one. */}
          <pre className="code">{task.status === "success" ? summary(task.result, 2000) : "—"}</pre>
        </div>
      </div>
      {!reused && <NodeLogs runId={run.id} node={task.key} attempt={task.attempts.length} following={following} />}
    </section>
  );
}
