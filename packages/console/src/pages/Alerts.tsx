import { useState } from "react";
import { api } from "../api";
import { Pager, useCursor } from "../components/Pager";
import { Empty, ErrorNote } from "../components/Status";
import { Time, Zone } from "../components/Time";
import { useAction, useApi } from "../hooks";
import { fill, useI18n } from "../i18n";
import { Link } from "../router";
import { ActionButton } from "../session";
import type { AlertMute, SentAlert } from "../types";

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
    <details className="delivery-error expandable small">
      <summary>
        <span className="short">{error}</span>
      </summary>
      <span className="full">{error}</span>
    </details>
  );
}

/** The mutes in force, each with what it covers and a button to end it; nothing when there are none. */
function Mutes({ mutes, onChange }: { mutes: AlertMute[]; onChange: (error?: Error) => void }) {
  const { t } = useI18n();
  const [busy, setBusy] = useState(false);
  if (mutes.length === 0) return null;
  const unmute = (id: number) => {
    setBusy(true);
    api
      .delete(`/api/alerts/mutes/${id}`)
      .then(() => onChange(), onChange)
      .finally(() => setBusy(false));
  };
  return (
    <section className="mutes" aria-label={t("alerts.mutes")}>
      <strong>{t("alerts.mutes")}</strong>
      {mutes.map((m) => (
        <div key={m.id} className="mute" data-mute={m.id}>
          <span className="pill">{m.group}</span> {m.flow ?? t("alerts.muteEveryFlow")}
          {m.task && <span className="muted"> / {m.task}</span>}{" "}
          <span className="muted small">
            {t("alerts.muteUntil")} <Time iso={m.until} /> · {t("alerts.muteBy")} {m.createdBy}
            {m.reason && <> · “{m.reason}”</>}
          </span>{" "}
          <ActionButton needs="admin" className="mute-end" disabled={busy} onClick={() => unmute(m.id)}>
            {t("alerts.unmute")}
          </ActionButton>
        </div>
      ))}
    </section>
  );
}

interface TestResult {
  group: string;
  results: SentAlert["deliveries"];
}

/**
 * A test alert through a group's sinks of the config in force (`POST /api/alerts/test`), to check
 * URLs and secrets before a real failure does; the server sends it, and each sink's answer shows
 * here. Nothing when the config defines no group.
 */
function TestAlert() {
  const { t } = useI18n();
  // A group added by a new version shows up without a reload, as on the Config page.
  const config = useApi<{ config: { parsed: { alerts?: Record<string, unknown> } } | null }>("/api/config", 10_000);
  const groups = Object.keys(config.data?.config?.parsed.alerts ?? {});
  const [picked, setPicked] = useState<string>();
  const action = useAction();
  const [tested, setTested] = useState<TestResult>();
  if (groups.length === 0) return null;
  const group = picked !== undefined && groups.includes(picked) ? picked : groups[0]!;
  const send = () => action.run(async () => setTested(await api.post<TestResult>("/api/alerts/test", { group })));
  return (
    <div className="actions test-alert">
      {groups.length > 1 && (
        <select aria-label={t("alerts.group")} value={group} onChange={(e) => setPicked(e.target.value)}>
          {groups.map((g) => (
            <option key={g}>{g}</option>
          ))}
        </select>
      )}
      <ActionButton needs="admin" title={t("alerts.testHint")} disabled={action.busy} onClick={send}>
        {fill(t("alerts.test"), { group })}
      </ActionButton>
      {tested && (
        <div className="test-results" role="status">
          <span className="muted small">{fill(t("alerts.tested"), { group: tested.group })}</span>
          {tested.results.map((d) => (
            <Delivery key={`${d.sink}:${d.target}`} delivery={d} />
          ))}
        </div>
      )}
      {action.error && (
        <div className="error-note" role="alert">
          {action.error}
        </div>
      )}
    </div>
  );
}

/** The alerts coordinators sent, newest first, and what each sink answered: "did the pager get it?" */
export function AlertsPage() {
  const { t } = useI18n();
  const pages = useCursor();
  const alerts = useApi<{ alerts: SentAlert[] }>(
    `/api/alerts?limit=${PAGE}${pages.cursor === undefined ? "" : `&before=${pages.cursor}`}`,
    5000,
  );
  const list = alerts.data?.alerts ?? [];
  const mutes = useApi<{ mutes: AlertMute[] }>("/api/alerts/mutes", 5000);
  const [actionError, setActionError] = useState<Error>();
  const changed = (error?: Error) => {
    setActionError(error);
    mutes.reload();
  };
  const inForce = mutes.data?.mutes ?? [];
  // An alert a mute in force already covers offers no second mute.
  const covered = (a: SentAlert) =>
    inForce.some((m) => m.group === a.group && (m.flow === null || m.flow === a.flow) && (m.task === null || m.task === a.alert.task));
  const mute = (a: SentAlert) =>
    api
      .post("/api/alerts/mutes", { group: a.group, flow: a.flow, task: a.alert.task ?? undefined, for: "1h" })
      .then(() => changed(), changed);
  return (
    <>
      <div className="page-head">
        <h1>{t("alerts")}</h1>
        <TestAlert />
      </div>
      <ErrorNote error={alerts.error ?? mutes.error ?? actionError} />
      <Mutes mutes={inForce} onChange={changed} />
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
                <th />
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
                  <td className="al-mute">
                    {a.kind !== "test" && !covered(a) && (
                      <ActionButton needs="admin" className="small" title={t("alerts.muteHint")} onClick={() => mute(a)}>
                        {t("alerts.mute")}
                      </ActionButton>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Pager cursor={pages} ids={list.map((a) => a.id)} pageSize={PAGE} labels={{ newest: t("alerts.newest"), older: t("alerts.older") }} />
    </>
  );
}
