import { fireSeconds } from "../format";
import { useI18n } from "../i18n";
import { Link } from "../router";
import { serverOriginal, serverText } from "../server-reasons";
import type { ScheduleInfo } from "../types";
import { StatusBadge } from "./Status";
import { Time } from "./Time";

/**
 * What the schedule's newest tick did: the run it made, or why it made none (an overlap skip).
 * `bare`: without its "Last tick" label, under a column that says it.
 */
export function LastTick({ schedule, bare = false }: { schedule: ScheduleInfo; bare?: boolean }) {
  const { t, lang } = useI18n();
  const tick = schedule.lastTick;
  if (!tick) return <p className="muted small">{t("flows.noTicks")}</p>;
  return (
    <p className="small last-tick" data-tick={tick.status}>
      {!bare && <span className="muted">{t("flows.lastTick")} </span>}
      <FireTime iso={tick.logicalDate} schedule={schedule} /> ·{" "}
      {tick.runId ? (
        <Link to={`/runs/${tick.runId}`}>
          <StatusBadge status={tick.runStatus ?? "pending"} />
        </Link>
      ) : (
        <span title={tick.reason ? serverOriginal(tick.reason, lang) : undefined}>
          {t(tick.status === "queued" ? "flows.tickQueued" : "flows.tickSkipped")}
          {tick.reason && `: ${serverText(tick.reason, lang)}`}
        </span>
      )}
    </p>
  );
}

/** A schedule's tick in the schedule's own zone, named: the zone its cron is read in; with seconds when its cron has them. */
export function FireTime({ iso, schedule }: { iso: string | null; schedule: ScheduleInfo }) {
  return <Time iso={iso} timeZone={schedule.timezone} seconds={fireSeconds(schedule.cron, schedule.nextFireTimes)} zone />;
}
