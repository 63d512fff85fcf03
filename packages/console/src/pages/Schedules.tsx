import { api } from "../api";
import { FireTime, LastTick } from "../components/ScheduleParts";
import { Empty, ErrorNote } from "../components/Status";
import { useAction, useApi } from "../hooks";
import { useI18n } from "../i18n";
import { Link } from "../router";
import { ActionButton } from "../session";
import type { ScheduleInfo } from "../types";

/** Every schedule of the cluster on one page, as `ax schedules` lists them: what fires next, what the last tick did, which are paused or overdue. */
export function SchedulesPage() {
  const { t } = useI18n();
  // Fire times move on and another operator may pause a schedule: kept fresh as the Flows page keeps them.
  const schedules = useApi<{ schedules: ScheduleInfo[] }>("/api/schedules", 5000);
  const action = useAction();
  const list = schedules.data?.schedules ?? [];
  const toggle = (s: ScheduleInfo) =>
    action.run(async () => {
      await api.post(`/api/flows/${encodeURIComponent(s.flow)}/schedule/${s.paused ? "resume" : "pause"}`);
      schedules.reload();
    });
  return (
    <>
      <h1>{t("schedules")}</h1>
      <ErrorNote error={schedules.error} />
      {action.error && (
        <div className="error-note" role="alert">
          {action.error}
        </div>
      )}
      {schedules.data && list.length === 0 ? (
        <Empty>{t("schedules.empty")}</Empty>
      ) : (
        <div className="table-wrap">
          <table className="table schedules">
            <thead>
              <tr>
                <th>{t("schedules.flow")}</th>
                <th>{t("schedules.cron")}</th>
                <th>{t("schedules.state")}</th>
                <th>{t("flows.nextOne")}</th>
                <th>{t("flows.lastTick")}</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {list.map((s) => (
                <tr key={s.flow} data-schedule={s.flow}>
                  <td className="sc-flow">
                    <Link to={`/flows/${encodeURIComponent(s.flow)}`}>{s.flow}</Link>
                  </td>
                  <td className="sc-cron">
                    <span className="mono">{s.cron}</span> <span className="muted small">{s.timezone}</span>
                  </td>
                  <td className="sc-state">
                    <span className={`pill ${s.paused ? "warn" : "ok"}`}>{s.paused ? t("flows.paused") : t("flows.active")}</span>
                    {s.overdueSince && (
                      <div className="overdue small" title={t("flows.overdueHint")}>
                        {t("flows.overdue")} <FireTime iso={s.overdueSince} schedule={s} />
                      </div>
                    )}
                  </td>
                  <td className="sc-next">
                    {s.paused ? <span className="muted">—</span> : <FireTime iso={s.nextFireTimes[0] ?? null} schedule={s} />}
                  </td>
                  <td className="sc-last">
                    <LastTick schedule={s} bare />
                  </td>
                  <td className="sc-action">
                    <ActionButton needs="admin" className="small" onClick={() => toggle(s)} disabled={action.busy}>
                      {s.paused ? t("resume") : t("pause")}
                    </ActionButton>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
