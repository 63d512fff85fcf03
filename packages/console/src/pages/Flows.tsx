import { useState } from "react";
import { ApiError, api } from "../api";
import { FlowBackfills } from "../components/Backfills";
import { Confirm } from "../components/Confirm";
import { Dag } from "../components/Dag";
import { RunStrip } from "../components/RunStrip";
import { Empty, ErrorNote, NotFound, StatusBadge } from "../components/Status";
import { FireTime, LastTick } from "../components/ScheduleParts";
import { Time, Zone } from "../components/Time";
import { TriggerDialog } from "../components/TriggerDialog";
import { shortId } from "../format";
import { useAction, useApi } from "../hooks";
import { fill, useI18n } from "../i18n";
import { Link } from "../router";
import type { FlowDescription, FlowOverview, RunSummary, ScheduleInfo } from "../types";
import { ActionButton } from "../session";

export function FlowsPage() {
  const { t } = useI18n();
  // One request for every card: a flow's size and recent runs, polled together.
  const overview = useApi<{ flows: FlowOverview[] }>("/api/flow-overview?runs=30", 5000);
  // Fire times move on and another operator may pause a schedule: kept fresh like the runs.
  const schedules = useApi<{ schedules: ScheduleInfo[] }>("/api/schedules", 5000);
  const flows = overview.data?.flows ?? [];
  return (
    <>
      <h1>{t("flows")}</h1>
      <ErrorNote error={overview.error} />
      {overview.data && flows.length === 0 && <Empty>{t("flows.empty")}</Empty>}
      <div className="cards">
        {flows.map((flow) => (
          <FlowCard key={flow.name} flow={flow} schedule={schedules.data?.schedules.find((s) => s.flow === flow.name)} />
        ))}
      </div>
    </>
  );
}

function FlowCard({ flow, schedule }: { flow: FlowOverview; schedule: ScheduleInfo | undefined }) {
  const { t } = useI18n();
  return (
    // The whole card opens the flow through its heading's link, stretched over it; the run cells
    // are links of their own above it (a link inside a link is not HTML: the outer one would win).
    <div className="card flow-card">
      <div className="card-head">
        <h2 className="ellipsis" title={flow.name}>
          <Link to={`/flows/${encodeURIComponent(flow.name)}`} className="card-link">
            {flow.name}
          </Link>
        </h2>
        <span className="muted nowrap">
          v{flow.version} · {`${flow.nodes} ${t(flow.nodes === 1 ? "flows.node" : "flows.nodes")}`}
        </span>
      </div>
      <RunStrip runs={flow.recentRuns} />
      <div className="muted small">
        {schedule ? (
          <>
            {schedule.cron} · {schedule.overdueSince && <span className="overdue">{t("flows.overdueShort")} · </span>}
            {schedule.paused ? (
              t("flows.paused")
            ) : (
              <>
                {t("flows.nextOne")} <FireTime iso={schedule.nextFireTimes[0] ?? null} schedule={schedule} />
              </>
            )}
          </>
        ) : (
          t("flows.noSchedule")
        )}
      </div>
      {flow.definedBy === 0 && (
        <div className="small undefined-flow" data-undefined>
          {fill(t("flows.undefined"), { name: flow.name })}
        </div>
      )}
    </div>
  );
}

export function FlowPage({ name }: { name: string }) {
  const { t } = useI18n();
  const [triggering, setTriggering] = useState(false);
  const [retiring, setRetiring] = useState(false);
  const retireAction = useAction();
  const flow = useApi<FlowDescription>(`/api/flows/${encodeURIComponent(name)}`);
  const versions = useApi<{ versions: { version: number; createdAt: string; nodes: number }[] }>(
    `/api/flows/${encodeURIComponent(name)}/versions`,
  );
  // Fire times move on and another operator may pause a schedule: kept fresh like the runs.
  const schedules = useApi<{ schedules: ScheduleInfo[] }>("/api/schedules", 5000);
  const runs = useApi<{ runs: RunSummary[] }>(`/api/runs?flow=${encodeURIComponent(name)}&limit=50`, 3000);
  const schedule = schedules.data?.schedules.find((s) => s.flow === name);
  const scheduleAction = useAction();
  if (flow.error instanceof ApiError && flow.error.status === 404)
    return (
      <NotFound title={t("flow.notFound.title")} body={fill(t("flow.notFound.body"), { name })} back={t("flow.missing")} to="/flows" />
    );
  if (flow.error)
    return (
      <>
        <div className="crumbs">
          <Link to="/flows">{t("flows")}</Link> /
        </div>
        <h1 className="ellipsis" title={name}>
          {name}
        </h1>
        <ErrorNote error={flow.error} />
        <Link to="/flows" className="back-link">
          ← {t("flow.missing")}
        </Link>
      </>
    );
  const toggle = () =>
    scheduleAction.run(async () => {
      await api.post(`/api/flows/${encodeURIComponent(name)}/schedule/${schedule?.paused ? "resume" : "pause"}`);
      schedules.reload();
    });
  return (
    <>
      <div className="page-head">
        <div>
          <div className="crumbs">
            <Link to="/flows">{t("flows")}</Link> /
          </div>
          <h1>{name}</h1>
        </div>
        {flow.data && !flow.data.retiredAt && (
          <div className="actions">
            {/* Offered once no running process defines it: retiring one in use would be refused. */}
            {flow.data.definedBy === 0 && (
              <ActionButton needs="admin" onClick={() => setRetiring(true)} disabled={retireAction.busy}>
                {t("flow.retire")}
              </ActionButton>
            )}
            <ActionButton needs="trigger" className="primary" onClick={() => setTriggering(true)}>
              {t("trigger")}
            </ActionButton>
          </div>
        )}
      </div>
      {retireAction.error && (
        <div className="error-note" role="alert">
          {retireAction.error}
        </div>
      )}
      {flow.data?.retiredAt && (
        <div className="note" role="status">
          <strong>
            {t("flow.retired")} <Time iso={flow.data.retiredAt} zone />
          </strong>{" "}
          {t("flow.retiredBody")}
        </div>
      )}
      {flow.data && (
        <Dag
          nodes={flow.data.nodes.map((n) => ({
            ...n,
            detail: n.task === n.key ? `${t("queue")} ${n.queue}` : `${n.task} · ${t("queue")} ${n.queue}`,
          }))}
        />
      )}
      <div className="grid-3">
        <section className="panel">
          <h3>
            {t("flows.recent")} <Zone />
          </h3>
          <RunStrip runs={runs.data?.runs ?? []} />
          <ul className="plain recent-runs">
            {(runs.data?.runs ?? []).slice(0, 6).map((r) => (
              <li key={r.id}>
                <Link to={`/runs/${r.id}`} className="recent-run">
                  <StatusBadge status={r.status} /> <span className="mono">{shortId(r.id)}</span>{" "}
                  <span className="muted ellipsis">
                    <Time iso={r.createdAt} />
                  </span>
                </Link>
              </li>
            ))}
          </ul>
          {(runs.data?.runs.length ?? 0) > 0 && (
            <Link to={`/runs?${new URLSearchParams({ flow: name })}`} className="all-runs">
              {t("flows.allRuns")}
            </Link>
          )}
        </section>
        <section className="panel">
          <h3>{t("flows.schedule")}</h3>
          {schedule ? (
            <>
              <p>
                <span className="mono">{schedule.cron}</span> <span className="muted">{schedule.timezone}</span>{" "}
                <span className={`pill ${schedule.paused ? "warn" : "ok"}`}>{schedule.paused ? t("flows.paused") : t("flows.active")}</span>
              </p>
              {schedule.overdueSince && (
                <div className="error-note inline" role="alert">
                  {t("flows.overdue")} <FireTime iso={schedule.overdueSince} schedule={schedule} /> {t("flows.overdueHint")}
                </div>
              )}
              {schedule.paused ? (
                <p className="muted small">{t("flows.pausedNoTicks")}</p>
              ) : (
                <>
                  <div className="muted small">{t(schedule.nextFireTimes.length === 1 ? "flows.nextOne" : "flows.next")}</div>
                  <ul className="plain">
                    {schedule.nextFireTimes.map((f) => (
                      <li key={f}>
                        <FireTime iso={f} schedule={schedule} />
                      </li>
                    ))}
                  </ul>
                </>
              )}
              <LastTick schedule={schedule} />
              <ActionButton needs="admin" onClick={toggle} disabled={scheduleAction.busy}>
                {schedule.paused ? t("resume") : t("pause")}
              </ActionButton>
              {scheduleAction.error && (
                <div className="error-note inline" role="alert">
                  {scheduleAction.error}
                </div>
              )}
            </>
          ) : (
            <p className="muted">{t(flow.data?.retiredAt ? "flow.retiredNoSchedule" : "flows.noSchedule")}</p>
          )}
        </section>
        <section className="panel">
          <h3>{t("flows.versions")}</h3>
          <ul className="plain">
            {(versions.data?.versions ?? []).map((v) => (
              <li key={v.version}>
                <strong>v{v.version}</strong>{" "}
                <span className="muted">
                  {v.nodes} {t(v.nodes === 1 ? "flows.node" : "flows.nodes")} · <Time iso={v.createdAt} zone />
                </span>
              </li>
            ))}
          </ul>
        </section>
      </div>
      {schedule && <FlowBackfills flow={name} schedule={schedule} />}
      {triggering && <TriggerDialog flow={name} onClose={() => setTriggering(false)} />}
      {retiring && (
        <Confirm
          title={fill(t("flow.retireTitle"), { name })}
          text={t("flow.retireConfirm")}
          keep={t("flow.retireKeep")}
          act={t("flow.retire")}
          onKeep={() => setRetiring(false)}
          onAct={() => {
            setRetiring(false);
            void retireAction.run(async () => {
              await api.post(`/api/flows/${encodeURIComponent(name)}/retire`);
              flow.reload();
              schedules.reload();
            });
          }}
        />
      )}
    </>
  );
}
