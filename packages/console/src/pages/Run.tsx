import { useState } from "react";
import { api } from "../api";
import { Dag } from "../components/Dag";
import type { DagNode } from "../components/dag-layout";
import { FirstFailure } from "../components/FirstFailure";
import { NodePanel } from "../components/NodePanel";
import { RunMeta } from "../components/RunMeta";
import { Confirm } from "../components/Confirm";
import { ErrorNote, NotFound, StatusBadge } from "../components/Status";
import { between, duration, progressText, shortId, summary, waitingFor } from "../format";
import { useAction, useNow } from "../hooks";
import { fill, type MessageKey, useI18n } from "../i18n";
import { Link, navigate, replace, useLocation } from "../router";
import { FINAL_RUN } from "../run-states";
import { RunNotFound, useLiveRun } from "../run-stream";
import { serverText } from "../server-reasons";
import type { RunInfo, TaskRunInfo } from "../types";
import { ActionButton } from "../session";

function nodeDetail(task: TaskRunInfo, now: number, { t, lang }: ReturnType<typeof useI18n>): string {
  if (task.reusedFrom) return `${t("status.reused")} · ${shortId(task.reusedFrom)}`;
  if (task.status === "retrying" && task.nextRetryAt) {
    const left = Date.parse(task.nextRetryAt) - now;
    // Due, and held by a limit (a full pool): that is what it waits for now.
    if (left <= 0 && task.waitingFor)
      return `${waitingFor(serverText(task.waitingFor, lang), t("run.dueAt"))} · #${task.attempts.length + 1}`;
    return `${left > 0 ? `${t("node.retryIn")} ${duration(left)}` : t("node.retryDue")} · #${task.attempts.length + 1}`;
  }
  if (task.status === "running") {
    const progress = task.progress === null ? "" : ` · ${progressText(task.progress, 24)}`;
    return `${between(task.startedAt, null, now)}${progress}`;
  }
  if ((task.status === "queued" || task.status === "pending") && task.waitingFor)
    return waitingFor(serverText(task.waitingFor, lang), t("run.dueAt"));
  if (task.finishedAt) return `${t(`status.${task.status}`)} · ${between(task.startedAt, task.finishedAt)}`;
  return t(`status.${task.status}`);
}

/**
 * What `rerun({ only: "failed" })` reruns, named for the run: its failed, skipped and cancelled
 * nodes, so for a cancelled run mostly the cancelled ones.
 */
function rerunFailedLabel(run: RunInfo): MessageKey {
  if (run.status !== "cancelled") return "run.rerunFailed";
  return run.tasks.some((n) => n.status === "failed") ? "run.rerunCancelledFailed" : "run.rerunCancelled";
}

export function RunPage({ id }: { id: string }) {
  const i18n = useI18n();
  const { t } = i18n;
  const { run, error, live, offline } = useLiveRun(id);
  // The open node lives in the address (`?node=<key>`), so it can be shared, and a link to a node
  // of a run (a reused node's source) opens its panel.
  const location = useLocation();
  const selected = location.searchParams.get("node") ?? undefined;
  const setSelected = (key: string | undefined) => {
    const next = new URLSearchParams(location.search);
    if (key) next.set("node", key);
    else next.delete("node");
    const q = next.toString();
    replace(`${location.pathname}${q ? `?${q}` : ""}`);
  };
  const action = useAction();
  const now = useNow(500);
  const [confirming, setConfirming] = useState<"cancel" | "rerunAll">();
  if (error instanceof RunNotFound)
    return (
      <NotFound title={t("run.notFound.title")} body={fill(t("run.notFound.body"), { id })} back={t("run.notFound.back")} to="/runs" />
    );
  if (error)
    return (
      <>
        <div className="crumbs">
          <Link to="/runs">{t("runs")}</Link> /
        </div>
        <ErrorNote error={error} />
      </>
    );
  if (!run)
    return offline ? (
      <div className="error-note" role="alert">
        {t("api.unreachable")}
      </div>
    ) : (
      <p className="muted">{t("loading")}</p>
    );
  const final = FINAL_RUN.includes(run.status);
  const nodes: DagNode[] = run.tasks.map((task) => ({
    key: task.key,
    task: task.task,
    upstream: task.upstream,
    status: task.reusedFrom ? "reused" : task.status,
    detail: nodeDetail(task, now, i18n),
  }));
  const act = (path: string, body?: object) =>
    action.run(async () => {
      const answer = await api.post<{ runId: string; rerunOf?: string }>(path, body);
      if (answer.rerunOf) navigate(`/runs/${answer.runId}`);
    });
  const task = run.tasks.find((n) => n.key === selected);
  const anyFailed = run.tasks.some((n) => ["failed", "skipped", "cancelled"].includes(n.status));
  return (
    <>
      <div className="page-head">
        <div>
          <div className="crumbs">
            <Link to="/runs">{t("runs")}</Link> / <Link to={`/flows/${encodeURIComponent(run.flow)}`}>{run.flow}</Link> /
          </div>
          <h1>
            <span className="mono">{shortId(run.id)}</span> <StatusBadge status={run.status} />
            {live && !final && <span className="live">{t("run.live")}</span>}
          </h1>
          <RunMeta run={run} now={now} />
        </div>
        <div className="actions">
          {!final && (
            <ActionButton needs="trigger" className="danger" disabled={action.busy} onClick={() => setConfirming("cancel")}>
              {t("run.cancel")}
            </ActionButton>
          )}
          {final && anyFailed && (
            <ActionButton
              needs="trigger"
              className="primary"
              disabled={action.busy}
              title={t("run.rerunFailedHint")}
              onClick={() => act(`/api/runs/${run.id}/rerun`, { only: "failed" })}
            >
              {t(rerunFailedLabel(run))}
            </ActionButton>
          )}
          {final && (
            <ActionButton needs="trigger" disabled={action.busy} onClick={() => setConfirming("rerunAll")}>
              {t("run.rerunAll")}
            </ActionButton>
          )}
        </div>
      </div>
      {confirming === "cancel" && !final && (
        <Confirm
          title={t("run.cancelTitle")}
          text={t("run.cancelConfirm")}
          keep={t("run.keepRunning")}
          act={t("run.cancel")}
          onKeep={() => setConfirming(undefined)}
          onAct={() => {
            setConfirming(undefined);
            act(`/api/runs/${run.id}/cancel`);
          }}
        />
      )}
      {confirming === "rerunAll" && final && (
        <Confirm
          title={t("run.rerunAllTitle")}
          text={fill(t("run.rerunAllConfirm"), { n: run.tasks.length })}
          keep={t("run.keepAsIs")}
          act={t("run.rerunAll")}
          onKeep={() => setConfirming(undefined)}
          onAct={() => {
            setConfirming(undefined);
            act(`/api/runs/${run.id}/rerun`, { only: "all" });
          }}
        />
      )}
      {offline && (
        <div className="error-note" role="status" data-testid="offline">
          {t("run.offline")}
        </div>
      )}
      <FirstFailure tasks={run.tasks} onSelect={setSelected} ongoing={!final} />
      {action.error && (
        <div className="error-note" role="alert">
          {action.error}
        </div>
      )}
      <Dag nodes={nodes} selected={selected} onSelect={setSelected} />
      {task ? (
        <NodePanel
          run={run}
          task={task}
          now={now}
          onClose={() => setSelected(undefined)}
          onSelect={setSelected}
          onRerunFrom={final ? () => act(`/api/runs/${run.id}/rerun`, { from: task.key }) : undefined}
          busy={action.busy}
        />
      ) : (
        <section className="panel">
          <p className="muted small hint">{t("run.hint")}</p>
          <h3>{t("run.payload")}</h3>
          <pre className="code">{summary(run.payload, 4000)}</pre>
        </section>
      )}
    </>
  );
}
