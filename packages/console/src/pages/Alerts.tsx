import { useState } from "react";
import { Empty, ErrorNote } from "../components/Status";
import { Time, Zone } from "../components/Time";
import { useApi } from "../hooks";
import { useI18n } from "../i18n";
import { Link } from "../router";
import type { SentAlert } from "../types";

const PAGE = 50;

/** A sink's answer: ✓, or ✗ with the reason written under it (a tooltip cannot be read on a touch screen). */
function Delivery({ delivery: d }: { delivery: SentAlert["deliveries"][number] }) {
  return (
    <div className="delivery">
      <span className={`pill ${d.ok ? "o-success" : "o-failed"}`} title={d.error ? `${d.target}: ${d.error}` : d.target}>
        {d.sink} {d.ok ? "✓" : "✗"}
      </span>
      {d.error && <DeliveryError error={d.error} />}
    </div>
  );
}

/**
 * A webhook's error can run to a paragraph: one line of it shows, the rest opens on a click, so
 * each row stays a row. Words are not broken in that line ("[redacted]" stays whole).
 */
const SHORT_ERROR = 40;

function DeliveryError({ error }: { error: string }) {
  if (error.length <= SHORT_ERROR) return <div className="delivery-error small">{error}</div>;
  return (
    <details className="delivery-error small">
      <summary>
        <span className="short">{error}</span>
      </summary>
      <span className="full">{error}</span>
    </details>
  );
}

/** The alerts coordinators sent, newest first, and what each sink answered: "did the pager get it?" */
export function AlertsPage() {
  const { t } = useI18n();
  // Ids of the last entry of each page read so far: "older" pushes one, "newest" clears them.
  const [before, setBefore] = useState<number[]>([]);
  const cursor = before.at(-1);
  const alerts = useApi<{ alerts: SentAlert[] }>(`/api/alerts?limit=${PAGE}${cursor === undefined ? "" : `&before=${cursor}`}`, 5000);
  const list = alerts.data?.alerts ?? [];
  return (
    <>
      <h1>{t("alerts")}</h1>
      <ErrorNote error={alerts.error} />
      {alerts.data && list.length === 0 ? (
        <Empty>{t("alerts.empty")}</Empty>
      ) : (
        <div className="table-wrap">
          <table className="table alerts">
            <thead>
              <tr>
                <th>
                  {t("alerts.sent")} <Zone />
                </th>
                <th>{t("alerts.group")}</th>
                <th>{t("alerts.kind")}</th>
                <th>{t("alerts.where")}</th>
                <th>{t("alerts.summary")}</th>
                <th>{t("alerts.delivery")}</th>
              </tr>
            </thead>
            <tbody>
              {list.map((a) => (
                <tr key={a.id} data-alert={a.id}>
                  <td className="al-sent muted nowrap">
                    <Time iso={a.sentAt} />
                  </td>
                  <td className="al-group">
                    <span className="pill">{a.group}</span>
                  </td>
                  <td className="al-kind mono small">{a.kind}</td>
                  <td className="al-where">
                    <Link to={`/flows/${encodeURIComponent(a.flow)}`}>{a.flow}</Link>
                    {a.alert.task && <span className="muted"> / {a.alert.task}</span>}
                  </td>
                  <td className="al-summary">
                    {a.runId ? (
                      <Link to={`/runs/${a.runId}`} className="run-link">
                        {a.alert.summary}
                      </Link>
                    ) : (
                      a.alert.summary
                    )}
                    {a.alert.suppressed > 0 && (
                      <span className="muted small">
                        {" "}
                        (+{a.alert.suppressed} {t("alerts.suppressed")})
                      </span>
                    )}
                  </td>
                  <td className="al-delivery">
                    {a.deliveries.map((d) => (
                      <Delivery key={`${d.sink}:${d.target}`} delivery={d} />
                    ))}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {(list.length > 0 || before.length > 0) && (
        <div className="pager">
          <button type="button" disabled={before.length === 0} onClick={() => setBefore([])}>
            {t("alerts.newest")}
          </button>
          <button
            type="button"
            disabled={list.length < PAGE}
            onClick={() => {
              const last = list.at(-1);
              if (last) setBefore([...before, last.id]);
            }}
          >
            {t("alerts.older")} →
          </button>
        </div>
      )}
    </>
  );
}
