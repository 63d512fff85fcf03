import { useEffect, useLayoutEffect, useRef, useState } from "react";
import { Bar, BarChart, Cell, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import { ApiError, api, stream } from "../api";
import { Dag, type DagNode } from "../components/Dag";
import { ErrorNote, StatusBadge } from "../components/Status";
import { Time, Zone } from "../components/Time";
import { between, dateTime, duration, durationTick, summary, waitingDue, waitingFor } from "../format";
import { useAction, useNow } from "../hooks";
import { label, type MessageKey, useI18n } from "../i18n";
import { Link, navigate, useLocation } from "../router";
import type { LogLine, RunInfo, TaskRunInfo } from "../types";

const FINAL = ["success", "failed", "cancelled"];
/** A node in one of these has had every attempt it will get. */
const FINAL_NODE = [...FINAL, "skipped"];

/** The run, kept current by its SSE feed (one PostgreSQL poll on the server whatever the number of viewers). */
function useLiveRun(id: string): { run: RunInfo | undefined; error: Error | undefined; live: boolean } {
  const [run, setRun] = useState<RunInfo>();
  const [error, setError] = useState<Error>();
  const [live, setLive] = useState(false);
  useEffect(() => {
    const abort = new AbortController();
    setRun(undefined);
    setError(undefined);
    let ended = false;
    const follow = async (): Promise<void> => {
      setLive(true);
      try {
        await stream(
          `/api/runs/${id}/stream`,
          (data, event) => {
            if (event === "message") setRun(JSON.parse(data) as RunInfo);
            if (event === "error") setError(new Error((JSON.parse(data) as { message: string }).message));
            if (event === "end" || event === "error") ended = true;
          },
          abort.signal,
        );
        // Closed without `end`: the server stopped (a restart, a deploy); follow the run again.
        if (!ended && !abort.signal.aborted) throw new Error("stream closed");
      } catch (e) {
        if (abort.signal.aborted) return;
        if (e instanceof ApiError && e.status === 404) {
          setError(new Error(`no run with id ${id}`));
          return;
        }
        // Refused: the login screen is showing, and retrying would only present the bad token again.
        if (e instanceof ApiError && e.status === 401) return;
        // The server restarted or the network blinked: read the run once, then follow it again.
        await new Promise((resolve) => setTimeout(resolve, 1000));
        if (!abort.signal.aborted) {
          setRun(await api.get<RunInfo>(`/api/runs/${id}`).catch(() => undefined));
          return follow();
        }
      } finally {
        if (!abort.signal.aborted) setLive(false);
      }
    };
    void follow();
    return () => abort.abort();
  }, [id]);
  return { run, error, live };
}

function nodeDetail(task: TaskRunInfo, now: number, t: ReturnType<typeof useI18n>["t"]): string {
  if (task.reusedFrom) return `${t("status.reused")} · ${task.reusedFrom.slice(0, 8)}`;
  if (task.status === "retrying" && task.nextRetryAt) {
    const left = Date.parse(task.nextRetryAt) - now;
    return `${left > 0 ? `${t("node.retryIn")} ${duration(left)}` : t("node.retryDue")} · #${task.attempts.length + 1}`;
  }
  if (task.status === "running") {
    const progress =
      task.progress === null ? "" : ` · ${typeof task.progress === "number" ? `${task.progress}%` : summary(task.progress, 24)}`;
    return `${between(task.startedAt, null, now)}${progress}`;
  }
  if ((task.status === "queued" || task.status === "pending") && task.waitingFor) return waitingFor(task.waitingFor, t("run.dueAt"));
  if (task.finishedAt) return `${t(`status.${task.status}`)} · ${between(task.startedAt, task.finishedAt)}`;
  return t(`status.${task.status}`);
}

export function RunPage({ id }: { id: string }) {
  const { t } = useI18n();
  const { run, error, live } = useLiveRun(id);
  const [selected, setSelected] = useState<string>();
  // A link to a node of this run (a reused node's source) opens its panel.
  const linked = useLocation().searchParams.get("node");
  // biome-ignore lint/correctness/useExhaustiveDependencies: another run's page linked the same way opens it there too
  useEffect(() => {
    if (linked) setSelected(linked);
  }, [id, linked]);
  const action = useAction();
  const now = useNow(500);
  if (error)
    return (
      <>
        <div className="crumbs">
          <Link to="/runs">{t("runs")}</Link> /
        </div>
        <ErrorNote error={error} />
      </>
    );
  if (!run) return <p className="muted">{t("loading")}</p>;
  const final = FINAL.includes(run.status);
  const nodes: DagNode[] = run.tasks.map((task) => ({
    key: task.key,
    task: task.task,
    upstream: task.upstream,
    status: task.reusedFrom ? "reused" : task.status,
    detail: nodeDetail(task, now, t),
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
            <span className="mono">{run.id.slice(0, 8)}</span> <StatusBadge status={run.status} />
            {live && !final && <span className="live">{t("run.live")}</span>}
          </h1>
          <div className="meta">
            <span>v{run.flowVersion}</span>
            <span>{label(t, "triggered", run.trigger)}</span>
            {run.businessKey && <span>{run.businessKey}</span>}
            <span>
              <Time iso={run.createdAt} zone />
            </span>
            <span>{between(run.startedAt, run.finishedAt, now)}</span>
            {run.rerunOf && (
              <span>
                {t("run.rerunOf")} <Link to={`/runs/${run.rerunOf}`}>{run.rerunOf.slice(0, 8)}</Link>
              </span>
            )}
            {run.waitingFor && <Waiting text={run.waitingFor} />}
          </div>
        </div>
        <div className="actions">
          {!final && (
            <button type="button" className="danger" disabled={action.busy} onClick={() => act(`/api/runs/${run.id}/cancel`)}>
              {t("run.cancel")}
            </button>
          )}
          {final && anyFailed && (
            <button
              type="button"
              className="primary"
              disabled={action.busy}
              onClick={() => act(`/api/runs/${run.id}/rerun`, { only: "failed" })}
            >
              {t("run.rerunFailed")}
            </button>
          )}
          {final && (
            <button type="button" disabled={action.busy} onClick={() => act(`/api/runs/${run.id}/rerun`, { only: "all" })}>
              {t("run.rerunAll")}
            </button>
          )}
        </div>
      </div>
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

/**
 * Limits whose slots running attempts hold: which runs hold them is the operator's next question.
 * The slots are anonymous in Redis, so the link lists the flow's running runs, where they usually are.
 */
const HELD_BY_RUNNING = /^(concurrency|pool|max_concurrency|worker slots)\b/;

/** A run's or node's `waitingFor`, a delayed one's due time written as the console writes times. */
function Waiting({ text }: { text: string }) {
  const { t } = useI18n();
  const due = waitingDue(text);
  return (
    <span title={due}>
      {t("run.waiting")}: {waitingFor(text, t("run.dueAt"))}
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
        {task.reusedFrom.slice(0, 8)}
      </Link>
      {MARKS[lang].stop}
      {lang === "en" && " "}
      {t("node.reusedElsewhere")}
    </p>
  );
}

function NodePanel({
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
  const { t } = useI18n();
  const input =
    task.upstream.length === 0
      ? run.payload
      : Object.fromEntries(task.upstream.map((u) => [u, run.tasks.find((n) => n.key === u)?.result ?? null]));
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
            <button type="button" className="primary" disabled={busy} onClick={onRerunFrom}>
              {t("run.rerunFrom")}
            </button>
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
        {task.waitingFor && HELD_BY_RUNNING.test(task.waitingFor) && (
          <Link to={`/runs?flow=${encodeURIComponent(run.flow)}&status=running`}>{t("node.heldBy")}</Link>
        )}
        {task.nextRetryAt && task.status === "retrying" && (
          <span>
            {t("node.retryIn")} {duration(Date.parse(task.nextRetryAt) - now)}
          </span>
        )}
        {task.progress !== null && (
          <span>
            {t("node.progress")} {summary(task.progress, 60)}
          </span>
        )}
      </div>
      {reused && <ReusedNote task={reused} />}
      {task.status === "skipped" && !reused && <SkipNote task={task} run={run} onSelect={onSelect} />}
      {task.error && (
        <div className="error-box" data-error={task.error.name}>
          <strong>{task.error.name}</strong>: {task.error.message}
          {task.error.notRetried && (
            <p className="not-retried">
              {t("node.notRetried")} {task.error.notRetried}
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
          <pre className="code">{summary(input, 2000)}</pre>
        </div>
        <div>
          <h3>{t("node.result")}</h3>
          {/* A node that has not succeeded has no result: null there would read as one. */}
          <pre className="code">{task.status === "success" ? summary(task.result, 2000) : "—"}</pre>
        </div>
      </div>
      {!reused && <Logs runId={run.id} node={task.key} attempt={task.attempts.length} following={following} />}
    </section>
  );
}

function Attempts({ task, now, createdAt }: { task: TaskRunInfo; now: number; createdAt: string }) {
  const { t } = useI18n();
  if (task.attempts.length === 0)
    return <p className="muted">{t(FINAL_NODE.includes(task.status) ? "node.noAttemptsFinal" : "node.noAttempts")}</p>;
  const runStart = Date.parse(task.attempts[0]?.startedAt ?? createdAt);
  const spanMs = Math.max(1, ...task.attempts.map((a) => (a.finishedAt ? Date.parse(a.finishedAt) : now) - runStart));
  const bars = task.attempts.map((a) => {
    const start = Date.parse(a.startedAt) - runStart;
    const end = (a.finishedAt ? Date.parse(a.finishedAt) : now) - runStart;
    return { name: `#${a.n}`, span: [start, Math.max(end, start + spanMs / 150)] as [number, number], outcome: a.outcome ?? "running" };
  });
  return (
    <>
      <div className="timeline">
        <ResponsiveContainer width="100%" height={28 * bars.length + 36}>
          <BarChart data={bars} layout="vertical" margin={{ left: 8, right: 24, top: 4, bottom: 4 }}>
            {/* Whole milliseconds: a short attempt's fractional ticks would round to the same label. */}
            <XAxis type="number" allowDecimals={false} tickFormatter={(v: number) => durationTick(v)} fontSize={11} stroke="#94a3b8" />
            <YAxis type="category" dataKey="name" width={36} fontSize={12} stroke="#94a3b8" />
            <Tooltip formatter={(v) => (Array.isArray(v) ? duration(Number(v[1]) - Number(v[0])) : String(v))} />
            <Bar dataKey="span" radius={4} isAnimationActive={false}>
              {bars.map((b) => (
                <Cell key={b.name} className={`bar-${b.outcome}`} />
              ))}
            </Bar>
          </BarChart>
        </ResponsiveContainer>
      </div>
      <div className="table-wrap">
        <table className="table compact attempts">
          <thead>
            <tr>
              <th>#</th>
              <th>{t("node.worker")}</th>
              <th>
                {t("node.start")} <Zone />
              </th>
              <th>{t("node.duration")}</th>
              <th>{t("node.outcome")}</th>
              <th>{t("node.error")}</th>
            </tr>
          </thead>
          <tbody>
            {task.attempts.map((a) => (
              <tr key={a.n} data-attempt={a.n}>
                <td className="a-n">{a.n}</td>
                <td className="a-worker mono small">{a.worker}</td>
                <td className="a-start muted">
                  <Time iso={a.startedAt} />
                </td>
                <td className="a-duration">{between(a.startedAt, a.finishedAt, now)}</td>
                <td className="a-outcome">
                  {a.outcome ? (
                    <span className={`pill o-${a.outcome}`}>{label(t, "outcome", a.outcome)}</span>
                  ) : (
                    <StatusBadge status="running" />
                  )}
                </td>
                <td className="a-error">
                  {a.error && (
                    <details>
                      <summary>
                        <strong>{a.error.name}</strong>: {a.error.message}
                      </summary>
                      {a.error.stack && <pre>{a.error.stack}</pre>}
                    </details>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

/** How often a running node's panel asks for its new log lines. */
const FOLLOW_MS = 1500;

/**
 * A node's lines from GET /api/runs/:id/logs; a server without that route (404) shows the empty
 * state. While the node runs or waits to retry, the lines its latest attempt logs after the last
 * one shown are fetched every FOLLOW_MS (`attempt=&after=`) and appended.
 */
function Logs({ runId, node, attempt, following }: { runId: string; node: string; attempt: number; following: boolean }) {
  const { t } = useI18n();
  const [lines, setLines] = useState<LogLine[]>([]);
  const [truncated, setTruncated] = useState(false);
  const followed = useRef(false);
  const box = useRef<HTMLDivElement>(null);
  // Follow the tail while the reader is at it; someone scrolled up to read keeps their place.
  const pinned = useRef(true);
  useEffect(() => {
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const all = `/api/runs/${runId}/logs?node=${encodeURIComponent(node)}`;
    // Lines are stored in batches shortly after they are logged: a node seen ending gets one more look.
    let looks = following ? Number.POSITIVE_INFINITY : followed.current ? 2 : 1;
    followed.current = following;
    let shown: LogLine[] = [];
    const load = async (first: boolean) => {
      const after = Math.max(0, ...shown.filter((l) => l.attempt === attempt).map((l) => l.seq));
      const path = first || !following ? all : `${all}&attempt=${attempt}&after=${after}`;
      try {
        const answer = await api.get<{ lines: LogLine[]; truncated: { node: string; attempt: number }[] }>(path);
        if (!live) return;
        shown = path === all ? answer.lines : [...shown, ...answer.lines];
        setLines(shown);
        if (path === all || answer.truncated.length > 0) setTruncated(answer.truncated.length > 0);
      } catch {
        if (live && path === all) {
          shown = [];
          setLines(shown);
        }
      }
      if (live && --looks > 0) timer = setTimeout(() => void load(false), FOLLOW_MS);
    };
    void load(true);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [runId, node, attempt, following]);
  // biome-ignore lint/correctness/useExhaustiveDependencies: new lines are what moves the tail
  useLayoutEffect(() => {
    if (following && pinned.current && box.current) box.current.scrollTop = box.current.scrollHeight;
  }, [lines, following]);
  const heading = (
    <h3>
      {t("node.logs")} {lines.length > 0 && <Zone />} {following && <span className="live">{t("run.live")}</span>}
    </h3>
  );
  if (lines.length === 0)
    return (
      <>
        {heading}
        <p className="muted">{t("node.noLogs")}</p>
      </>
    );
  return (
    <>
      {heading}
      <div
        className="logs"
        ref={box}
        onScroll={(e) => {
          const el = e.currentTarget;
          pinned.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
        }}
      >
        {lines.map((l) => (
          <div key={`${l.attempt}:${l.seq}`} className={`log l-${l.level}`}>
            <span className="muted at" title={l.at}>
              {dateTime(l.at)}
            </span>
            <span className="mono">#{l.attempt}</span>
            <span className="lvl">{l.level}</span>
            <span className="msg">{l.msg}</span>
            {l.fields && <span className="muted mono fields">{JSON.stringify(l.fields)}</span>}
          </div>
        ))}
        {truncated && <div className="muted small">…</div>}
      </div>
    </>
  );
}
