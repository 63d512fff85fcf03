import { useEffect, useLayoutEffect, useRef, useState } from "react";
import { Bar, BarChart, Cell, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import { ApiError, api, stream } from "../api";
import { Dag, type DagNode } from "../components/Dag";
import { ErrorNote, StatusBadge } from "../components/Status";
import { between, duration, summary, time } from "../format";
import { useAction, useNow } from "../hooks";
import { label, useI18n } from "../i18n";
import { Link, navigate } from "../router";
import type { LogLine, RunInfo, TaskRunInfo } from "../types";

const FINAL = ["success", "failed", "cancelled"];

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
  if ((task.status === "queued" || task.status === "pending") && task.waitingFor) return task.waitingFor;
  if (task.finishedAt) return `${t(`status.${task.status}`)} · ${between(task.startedAt, task.finishedAt)}`;
  return t(`status.${task.status}`);
}

export function RunPage({ id }: { id: string }) {
  const { t } = useI18n();
  const { run, error, live } = useLiveRun(id);
  const [selected, setSelected] = useState<string>();
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
            <span>{time(run.createdAt)}</span>
            <span>{between(run.startedAt, run.finishedAt, now)}</span>
            {run.rerunOf && (
              <span>
                {t("run.rerunOf")} <Link to={`/runs/${run.rerunOf}`}>{run.rerunOf.slice(0, 8)}</Link>
              </span>
            )}
            {run.waitingFor && (
              <span>
                {t("run.waiting")}: {run.waitingFor}
              </span>
            )}
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

function NodePanel({
  run,
  task,
  now,
  onClose,
  onRerunFrom,
  busy,
}: {
  run: RunInfo;
  task: TaskRunInfo;
  now: number;
  onClose: () => void;
  onRerunFrom: (() => void) | undefined;
  busy: boolean;
}) {
  const { t } = useI18n();
  const input =
    task.upstream.length === 0
      ? run.payload
      : Object.fromEntries(task.upstream.map((u) => [u, run.tasks.find((n) => n.key === u)?.result ?? null]));
  const following = task.status === "running" || task.status === "retrying";
  const runStart = Date.parse(task.attempts[0]?.startedAt ?? run.createdAt);
  const spanMs = Math.max(1, ...task.attempts.map((a) => (a.finishedAt ? Date.parse(a.finishedAt) : now) - runStart));
  const bars = task.attempts.map((a) => {
    const start = Date.parse(a.startedAt) - runStart;
    const end = (a.finishedAt ? Date.parse(a.finishedAt) : now) - runStart;
    return { name: `#${a.n}`, span: [start, Math.max(end, start + spanMs / 150)] as [number, number], outcome: a.outcome ?? "running" };
  });
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
        {task.reusedFrom && (
          <span>
            {t("node.reused")} <Link to={`/runs/${task.reusedFrom}`}>{task.reusedFrom.slice(0, 8)}</Link>
          </span>
        )}
        {task.waitingFor && (
          <span>
            {t("run.waiting")}: {task.waitingFor}
          </span>
        )}
        {task.nextRetryAt && task.status === "retrying" && (
          <span>
            {t("node.retryIn")} {duration(Math.max(0, Date.parse(task.nextRetryAt) - now))}
          </span>
        )}
        {task.progress !== null && (
          <span>
            {t("node.progress")} {summary(task.progress, 60)}
          </span>
        )}
      </div>
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
      <h3>{t("node.attempts")}</h3>
      {task.attempts.length === 0 ? (
        <p className="muted">{t("node.noAttempts")}</p>
      ) : (
        <>
          <div className="timeline">
            <ResponsiveContainer width="100%" height={28 * bars.length + 36}>
              <BarChart data={bars} layout="vertical" margin={{ left: 8, right: 24, top: 4, bottom: 4 }}>
                {/* Whole milliseconds: a short attempt's fractional ticks would round to the same label. */}
                <XAxis type="number" allowDecimals={false} tickFormatter={(v: number) => duration(v)} fontSize={11} stroke="#94a3b8" />
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
            <table className="table compact">
              <thead>
                <tr>
                  <th>#</th>
                  <th>{t("node.worker")}</th>
                  <th>{t("node.start")}</th>
                  <th>{t("node.duration")}</th>
                  <th>{t("node.outcome")}</th>
                  <th>{t("node.error")}</th>
                </tr>
              </thead>
              <tbody>
                {task.attempts.map((a) => (
                  <tr key={a.n} data-attempt={a.n}>
                    <td>{a.n}</td>
                    <td className="mono small">{a.worker}</td>
                    <td className="muted">{time(a.startedAt)}</td>
                    <td>{between(a.startedAt, a.finishedAt, now)}</td>
                    <td>
                      {a.outcome ? (
                        <span className={`pill o-${a.outcome}`}>{label(t, "outcome", a.outcome)}</span>
                      ) : (
                        <StatusBadge status="running" />
                      )}
                    </td>
                    <td>
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
      <h3>
        {t("node.logs")} {following && <span className="live">{t("run.live")}</span>}
      </h3>
      <Logs runId={run.id} node={task.key} attempt={task.attempts.length} following={following} />
    </section>
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
  if (lines.length === 0) return <p className="muted">{t("node.noLogs")}</p>;
  return (
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
          <span className="muted">{new Date(l.at).toLocaleTimeString()}</span>
          <span className="mono">#{l.attempt}</span>
          <span className="lvl">{l.level}</span>
          <span>{l.msg}</span>
          {l.fields && <span className="muted mono">{JSON.stringify(l.fields)}</span>}
        </div>
      ))}
      {truncated && <div className="muted small">…</div>}
    </div>
  );
}
