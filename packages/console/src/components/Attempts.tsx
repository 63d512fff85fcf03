import { DEFAULT_LEASE_MS } from "@ax/common/defaults";
import { Bar, BarChart, Cell, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import { between, duration, durationTick } from "../format";
import { fill, label, useI18n } from "../i18n";
import { FINAL_NODE } from "../run-states";
import type { AttemptInfo, TaskRunInfo } from "../types";
import { StatusBadge } from "./Status";
import { Time, Zone } from "./Time";

// Past the lease a silent worker is presumed crashed; until the reconciler's pass its attempt still
// reads running. The server sends a silence only from two missed heartbeats on.

function WorkerSilence({ silentMs }: { silentMs: number | null }) {
  const { t } = useI18n();
  if (silentMs === null) return null;
  const lost = silentMs >= DEFAULT_LEASE_MS;
  return (
    <span className={`pill ${lost ? "o-crashed" : "warn"} worker-silence`}>
      {fill(t(lost ? "node.workerLost" : "node.workerSilent"), { d: duration(silentMs) })}
    </span>
  );
}

/**
 * What an attempt's colour and label say: the API records an attempt the run's cancel stopped as
 * `failed` with `AxCancelledError` (docs/states.md), which a person reads as cancelled, not as a failure.
 */
function shownOutcome(a: AttemptInfo): string | null {
  return a.outcome === "failed" && a.error?.name === "AxCancelledError" ? "cancelled" : a.outcome;
}

export function Attempts({ task, now, createdAt }: { task: TaskRunInfo; now: number; createdAt: string }) {
  const { t } = useI18n();
  if (task.attempts.length === 0)
    return <p className="muted">{t(FINAL_NODE.includes(task.status) ? "node.noAttemptsFinal" : "node.noAttempts")}</p>;
  const runStart = Date.parse(task.attempts[0]?.startedAt ?? createdAt);
  const spanMs = Math.max(1, ...task.attempts.map((a) => (a.finishedAt ? Date.parse(a.finishedAt) : now) - runStart));
  const bars = task.attempts.map((a) => {
    const start = Date.parse(a.startedAt) - runStart;
    const end = (a.finishedAt ? Date.parse(a.finishedAt) : now) - runStart;
    return {
      name: `#${a.n}`,
      span: [start, Math.max(end, start + spanMs / 150)] as [number, number],
      outcome: shownOutcome(a) ?? "running",
    };
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
                    <span className={`pill o-${shownOutcome(a)}`}>{label(t, "outcome", shownOutcome(a)!)}</span>
                  ) : (
                    <StatusBadge status="running" />
                  )}
                </td>
                <td className="a-error">
                  <WorkerSilence silentMs={a.workerSilentMs} />
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
