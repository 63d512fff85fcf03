import { useState } from "react";
import { api } from "../api";
import { useAction, useApi } from "../hooks";
import { fill, useI18n } from "../i18n";
import { Link } from "../router";
import type { BackfillInfo, ScheduleInfo } from "../types";
import { Time } from "./Time";
import { ActionButton } from "../session";

/** A day typed in a date field, as the instant the API takes: a date alone is midnight UTC, as the CLI reads it. */
const midnightUtc = (day: string) => `${day}T00:00:00Z`;

/**
 * Runs a scheduled flow for past dates: one run per tick of its schedule in [from, to), at most
 * so many at once, and the flow's backfills with their progress, cancel and retry of failed ticks.
 */
export function FlowBackfills({ flow, schedule }: { flow: string; schedule: ScheduleInfo }) {
  const { t } = useI18n();
  const [from, setFrom] = useState("");
  const [to, setTo] = useState("");
  const [atOnce, setAtOnce] = useState("");
  const [started, setStarted] = useState<{ ticks: number; created: number; maxConcurrentRuns: number }>();
  const action = useAction();
  // All flows' newest backfills, this flow's kept: the list route has no flow filter.
  const backfills = useApi<{ backfills: BackfillInfo[] }>("/api/backfills?limit=200", 3000);
  const mine = (backfills.data?.backfills ?? []).filter((b) => b.flow === flow);
  const start = () =>
    action.run(async () => {
      setStarted(undefined);
      const body = { from: midnightUtc(from), to: midnightUtc(to), ...(atOnce ? { maxConcurrentRuns: Number(atOnce) } : {}) };
      setStarted(await api.post(`/api/flows/${encodeURIComponent(flow)}/backfills`, body));
      backfills.reload();
    });
  const act = (id: string, what: "cancel" | "retry") =>
    action.run(async () => {
      await api.post(`/api/backfills/${id}/${what}`);
      backfills.reload();
    });
  return (
    <section className="panel backfills" data-testid="backfills">
      <h3>{t("backfill.title")}</h3>
      <p className="muted small">{fill(t("backfill.explain"), { cron: schedule.cron, zone: schedule.timezone })}</p>
      <div className="backfill-form">
        <label className="field">
          <span>{t("backfill.from")}</span>
          <input type="date" name="backfillFrom" value={from} onChange={(e) => setFrom(e.target.value)} />
        </label>
        <label className="field">
          <span>{t("backfill.to")}</span>
          <input type="date" name="backfillTo" value={to} onChange={(e) => setTo(e.target.value)} />
        </label>
        <label className="field">
          <span>{t("backfill.atOnce")}</span>
          <input type="number" min={1} name="backfillAtOnce" value={atOnce} onChange={(e) => setAtOnce(e.target.value)} />
        </label>
        <ActionButton needs="trigger" className="primary" disabled={!from || !to || action.busy} onClick={start}>
          {action.busy ? t("backfill.starting") : t("backfill.start")}
        </ActionButton>
      </div>
      {started && (
        <div className="note" role="status">
          {fill(t(started.created < started.ticks ? "backfill.startedExisting" : "backfill.started"), {
            ticks: started.ticks,
            created: started.created,
            atOnce: started.maxConcurrentRuns,
            existing: started.ticks - started.created,
          })}
        </div>
      )}
      {action.error && (
        <div className="error-note inline" role="alert">
          {action.error}
        </div>
      )}
      {mine.length === 0 ? (
        <p className="muted small">{t("backfill.none")}</p>
      ) : (
        <ul className="plain backfill-list">
          {mine.map((b) => (
            <BackfillRow key={b.id} backfill={b} busy={action.busy} onAct={act} flow={flow} />
          ))}
        </ul>
      )}
    </section>
  );
}

function BackfillRow({
  backfill: b,
  busy,
  onAct,
  flow,
}: {
  backfill: BackfillInfo;
  busy: boolean;
  onAct: (id: string, what: "cancel" | "retry") => void;
  flow: string;
}) {
  const { t } = useI18n();
  const share = (n: number) => `${(100 * n) / Math.max(1, b.ticks)}%`;
  const retryable = b.status !== "cancelled" && b.failed + b.cancelled > 0 && b.running === 0 && b.waiting === 0;
  return (
    <li data-backfill={b.id}>
      <div className="backfill-head">
        <span>
          <Time iso={b.from} timeZone="UTC" zone /> → <Time iso={b.to} timeZone="UTC" zone />
        </span>
        <span className={`pill b-${b.status}`}>{t(`backfill.status.${b.status}`)}</span>
      </div>
      <div className="backfill-bar" aria-hidden="true">
        <span className="s-success" style={{ width: share(b.succeeded) }} />
        <span className="s-failed" style={{ width: share(b.failed) }} />
        <span className="s-cancelled" style={{ width: share(b.cancelled) }} />
        <span className="s-running" style={{ width: share(b.running) }} />
      </div>
      <div className="muted small backfill-counts">
        {fill(t("backfill.counts"), {
          done: b.done,
          ticks: b.ticks,
          succeeded: b.succeeded,
          failed: b.failed,
          cancelled: b.cancelled,
          running: b.running,
          waiting: b.waiting,
          atOnce: b.maxConcurrentRuns,
        })}{" "}
        {b.pruned > 0 && <>{fill(t("backfill.pruned"), { pruned: b.pruned })} </>}
        <Link to={`/runs?flow=${encodeURIComponent(flow)}&trigger=backfill`} className="backfill-runs">
          {t("backfill.runs")}
        </Link>
      </div>
      <div className="backfill-actions">
        {b.status === "active" && (
          <ActionButton needs="trigger" disabled={busy} onClick={() => onAct(b.id, "cancel")}>
            {t("backfill.cancel")}
          </ActionButton>
        )}
        {retryable && (
          <ActionButton needs="trigger" disabled={busy} onClick={() => onAct(b.id, "retry")}>
            {t("backfill.retry")}
          </ActionButton>
        )}
      </div>
    </li>
  );
}
