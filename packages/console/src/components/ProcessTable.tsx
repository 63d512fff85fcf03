import type { ReactNode } from "react";
import { fill, useI18n } from "../i18n";
import { Time, Zone } from "./Time";

interface ProcessRow {
  id: string;
  hostname: string;
  pid: number;
  configVersion: number | null;
  heartbeatAt: string;
}

/** A column of what one kind of process has that the others do not (a worker's queues, a process's roles). */
export interface ProcessColumn<T> {
  label: string;
  cell: (row: T) => ReactNode;
  className?: (row: T) => string | undefined;
}

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

/** Processes of the cluster: id, host, the kind's own columns, config version, last report. */
export function ProcessTable<T extends ProcessRow>({
  rows,
  columns,
  newest,
  className,
}: {
  rows: T[];
  columns: ProcessColumn<T>[];
  newest: number | null;
  className?: string;
}) {
  const { t } = useI18n();
  return (
    <div className="table-wrap">
      <table className={`table stack${className ? ` ${className}` : ""}`}>
        <thead>
          <tr>
            <th>id</th>
            <th>{t("workers.host")}</th>
            {columns.map((c) => (
              <th key={c.label}>{c.label}</th>
            ))}
            <th>{t("workers.version")}</th>
            <th>
              {t("workers.heartbeat")} <Zone />
            </th>
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={row.id}>
              <td className="mono small stack-wide process-id" data-label="id">
                {row.id}
              </td>
              <td className="stack-wide" data-label={t("workers.host")}>
                {row.hostname} <span className="muted nowrap">pid {row.pid}</span>
              </td>
              {columns.map((c) => (
                <td key={c.label} className={c.className?.(row)} data-label={c.label}>
                  {c.cell(row)}
                </td>
              ))}
              <td data-label={t("workers.version")}>
                <AppliedVersion version={row.configVersion} newest={newest} />
              </td>
              <td className="muted" data-label={t("workers.heartbeat")}>
                <Time iso={row.heartbeatAt} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Each string a small pill: queues, roles. */
export function Pills({ items }: { items: string[] }) {
  return (
    <>
      {items.map((item) => (
        <span key={item} className="pill">
          {item}
        </span>
      ))}
    </>
  );
}
