import { Pills, ProcessTable } from "../components/ProcessTable";
import { Empty, ErrorNote } from "../components/Status";
import { useApi } from "../hooks";
import { useI18n } from "../i18n";
import { serverOriginal, serverText } from "../server-reasons";
import type { ProcessInfo, QueueInfo, WorkerInfo } from "../types";

export function WorkersPage() {
  const { t, lang } = useI18n();
  const workers = useApi<{ workers: WorkerInfo[] }>("/api/workers", 2000);
  const queues = useApi<{ queues: QueueInfo[] }>("/api/queues", 2000);
  const cluster = useApi<{ version: number | null; processes: ProcessInfo[] }>("/api/config/cluster", 2000);
  const live = (workers.data?.workers ?? []).filter((w) => w.live);
  const others = (cluster.data?.processes ?? []).filter((p) => p.live && !p.roles.includes("worker"));
  const newest = cluster.data?.version ?? null;
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
        <Empty>{t("workers.othersNone")}</Empty>
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
              {(queues.data?.queues ?? []).map((q) => (
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
        </div>
      )}
    </>
  );
}
