import { Empty, ErrorNote } from "../components/Status";
import { Time, Zone } from "../components/Time";
import { useApi } from "../hooks";
import { fill, useI18n } from "../i18n";
import { serverOriginal, serverText } from "../server-reasons";
import type { ProcessInfo, QueueInfo, WorkerInfo } from "../types";

/** The version a process applies; a live one not on the newest stored version is a straggler. */
function AppliedVersion({ version, newest }: { version: number | null; newest: number | null }) {
  const { t } = useI18n();
  return (
    <>
      {version === null ? "—" : `v${version}`}
      {newest !== null && version !== newest && <span className="pill warn behind">{fill(t("workers.behind"), { version: newest })}</span>}
    </>
  );
}

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
        <div className="table-wrap">
          <table className="table stack">
            <thead>
              <tr>
                <th>id</th>
                <th>{t("workers.host")}</th>
                <th>{t("workers.queues")}</th>
                <th>{t("workers.running")}</th>
                <th>{t("workers.version")}</th>
                <th>
                  {t("workers.heartbeat")} <Zone />
                </th>
              </tr>
            </thead>
            <tbody>
              {live.map((w) => (
                <tr key={w.id}>
                  <td className="mono small stack-wide" data-label="id">
                    {w.id}
                  </td>
                  <td className="stack-wide" data-label={t("workers.host")}>
                    {w.hostname} <span className="muted">pid {w.pid}</span>
                  </td>
                  <td className="stack-wide" data-label={t("workers.queues")}>
                    {w.queues.map((q) => (
                      <span key={q} className="pill">
                        {q}
                      </span>
                    ))}
                  </td>
                  <td
                    className={w.concurrency !== null && w.running >= w.concurrency ? "full" : undefined}
                    data-label={t("workers.running")}
                  >
                    {w.running}
                    {w.concurrency !== null && <span className="muted"> / {w.concurrency}</span>}
                  </td>
                  <td data-label={t("workers.version")}>
                    <AppliedVersion version={w.configVersion} newest={newest} />
                  </td>
                  <td className="muted" data-label={t("workers.heartbeat")}>
                    <Time iso={w.heartbeatAt} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <h2>{t("workers.others")}</h2>
      {cluster.data && others.length === 0 ? (
        <Empty>{t("workers.othersNone")}</Empty>
      ) : (
        <div className="table-wrap">
          <table className="table stack others">
            <thead>
              <tr>
                <th>id</th>
                <th>{t("workers.host")}</th>
                <th>{t("workers.roles")}</th>
                <th>{t("workers.version")}</th>
                <th>
                  {t("workers.heartbeat")} <Zone />
                </th>
              </tr>
            </thead>
            <tbody>
              {others.map((p) => (
                <tr key={p.id}>
                  <td className="mono small stack-wide" data-label="id">
                    {p.id}
                  </td>
                  <td className="stack-wide" data-label={t("workers.host")}>
                    {p.hostname} <span className="muted">pid {p.pid}</span>
                  </td>
                  <td data-label={t("workers.roles")}>
                    {p.roles.map((role) => (
                      <span key={role} className="pill">
                        {role}
                      </span>
                    ))}
                  </td>
                  <td data-label={t("workers.version")}>
                    <AppliedVersion version={p.configVersion} newest={newest} />
                  </td>
                  <td className="muted" data-label={t("workers.heartbeat")}>
                    <Time iso={p.heartbeatAt} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
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
