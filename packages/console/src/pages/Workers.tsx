import { useState } from "react";
import { Pills, ProcessTable } from "../components/ProcessTable";
import { Empty, ErrorNote } from "../components/Status";
import { useApi } from "../hooks";
import { fill, useI18n } from "../i18n";
import { serverOriginal, serverText } from "../server-reasons";
import type { ProcessInfo, QueueInfo, WorkerInfo } from "../types";

/** Idle queues shown beside busy ones without a click: a few do not hide anything. */
const IDLE_SHOWN = 5;

export function WorkersPage() {
  const { t, lang } = useI18n();
  const workers = useApi<{ workers: WorkerInfo[] }>("/api/workers", 2000);
  const queues = useApi<{ queues: QueueInfo[] }>("/api/queues", 2000);
  const cluster = useApi<{ version: number | null; processes: ProcessInfo[] }>("/api/config/cluster", 2000);
  const live = (workers.data?.workers ?? []).filter((w) => w.live);
  const processes = cluster.data?.processes ?? [];
  const others = processes.filter((p) => p.live && !p.roles.includes("worker"));
  const rolesOf = new Map(processes.map((p) => [p.id, p.roles]));
  // `ax dev` and a Runtime of every role: its coordinator is a worker row, which says so.
  const coordinatesToo = live.some((w) => rolesOf.get(w.id)?.some((r) => r !== "worker"));
  const newest = cluster.data?.version ?? null;
  const [showIdle, setShowIdle] = useState(false);
  const all = queues.data?.queues ?? [];
  // Queues with something waiting, running, delayed or held come first; a cluster's many idle ones fold away.
  const busy = all.filter((q) => q.waiting + q.active + q.delayed > 0 || q.limited);
  const idle = all.filter((q) => !busy.includes(q));
  const folds = busy.length > 0 && idle.length > IDLE_SHOWN;
  const shown = folds && !showIdle ? busy : [...busy, ...idle];
  return (
    <>
      <h1>{t("workers")}</h1>
      <ErrorNote error={workers.error ?? queues.error ?? cluster.error} />
      <h2>{t("workers.workerProcesses")}</h2>
      {workers.data && live.length === 0 ? (
        <Empty>{t("workers.none")}</Empty>
      ) : (
        <ProcessTable
          rows={live}
          newest={newest}
          columns={[
            { label: t("workers.roles"), cell: (w) => <Pills items={rolesOf.get(w.id) ?? ["worker"]} /> },
            { label: t("workers.queues"), cell: (w) => <Pills items={w.queues} />, className: () => "stack-wide" },
            {
              label: t("workers.running"),
              cell: (w) => (
                <>
                  {w.running}
                  {w.concurrency !== null && <span className="muted"> / {w.concurrency}</span>}
                </>
              ),
              className: (w) => (w.concurrency !== null && w.running >= w.concurrency ? "full" : undefined),
            },
          ]}
        />
      )}
      <h2>{t("workers.others")}</h2>
      {cluster.data && others.length === 0 ? (
        <Empty>{t(coordinatesToo ? "workers.othersInWorkers" : "workers.othersNone")}</Empty>
      ) : (
        <ProcessTable
          rows={others}
          newest={newest}
          className="others"
          columns={[{ label: t("workers.roles"), cell: (p) => <Pills items={p.roles} /> }]}
        />
      )}
      <h2>{t("workers.queues")}</h2>
      {queues.data && queues.data.queues.length === 0 ? (
        <Empty>{t("queues.none")}</Empty>
      ) : (
        <div className="table-wrap">
          <table className="table stack">
            <thead>
              <tr>
                <th>{t("queues.name")}</th>
                <th>{t("queues.waiting")}</th>
                <th>{t("queues.active")}</th>
                <th>{t("queues.delayed")}</th>
                <th>{t("queues.limited")}</th>
                <th>{t("workers.processes")}</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((q) => (
                <tr key={q.name}>
                  <td className="mono stack-title">{q.name}</td>
                  <td data-label={t("queues.waiting")}>{q.waiting}</td>
                  <td data-label={t("queues.active")}>{q.active}</td>
                  <td data-label={t("queues.delayed")}>{q.delayed}</td>
                  <td title={q.limited ? serverOriginal(q.limited, lang) : undefined} data-label={t("queues.limited")}>
                    {q.limited ? serverText(q.limited, lang) : <span className="muted">—</span>}
                  </td>
                  <td data-label={t("workers.processes")}>{q.workers}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {folds && (
            <button type="button" className="link idle-queues" onClick={() => setShowIdle(!showIdle)}>
              {fill(t(showIdle ? "queues.hideIdle" : "queues.showIdle"), { count: idle.length })}
            </button>
          )}
        </div>
      )}
    </>
  );
}
