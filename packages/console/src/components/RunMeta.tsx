import type { ReactNode } from "react";
import { between, shortId } from "../format";
import { label, type MessageKey, useI18n } from "../i18n";
import { Link } from "../router";
import { FINAL_RUN } from "../run-states";
import type { RunInfo } from "../types";
import { HeldBy } from "./HeldBy";
import { Waiting } from "./NodePanel";
import { Time } from "./Time";

/** One value of the run's header, named: "trigger event", not a bare "event". */
function Item({ name, children }: { name: MessageKey; children: ReactNode }) {
  const { t } = useI18n();
  return (
    <span className="meta-item" data-meta={name.replace("run.meta.", "")}>
      <span className="meta-label">{t(name)}</span> <span className="meta-value">{children}</span>
    </span>
  );
}

/** The run's facts under its heading, each with its name: version, trigger, key, times, why it waits. */
export function RunMeta({ run, now }: { run: RunInfo; now: number }) {
  const { t } = useI18n();
  const final = FINAL_RUN.includes(run.status);
  return (
    <div className="meta">
      <Item name="run.meta.version">v{run.flowVersion}</Item>
      <Item name="run.meta.trigger">{label(t, "triggered", run.trigger)}</Item>
      {/* Which tick a schedule's or a backfill's run is for: its created time is when it was made, not the day it covers. */}
      {run.logicalDate && (
        <Item name="run.meta.logicalDate">
          <Time iso={run.logicalDate} zone />
        </Item>
      )}
      {run.businessKey && <Item name="run.meta.key">{run.businessKey}</Item>}
      <Item name="run.meta.created">
        <Time iso={run.createdAt} zone />
      </Item>
      {/* A cancelled run's end is when it was cancelled; the others' is in how long they took. */}
      {run.status === "cancelled" && run.finishedAt && (
        <Item name="run.meta.cancelled">
          <Time iso={run.finishedAt} zone />
        </Item>
      )}
      {run.startedAt && <Item name={final ? "run.meta.took" : "run.meta.runningFor"}>{between(run.startedAt, run.finishedAt, now)}</Item>}
      {run.rerunOf && (
        <span>
          {t("run.rerunOf")} <Link to={`/runs/${run.rerunOf}`}>{shortId(run.rerunOf)}</Link>
        </span>
      )}
      {run.waitingFor && <Waiting text={run.waitingFor} />}
      {run.waitingFor && <HeldBy text={run.waitingFor} flow={run.flow} />}
    </div>
  );
}
