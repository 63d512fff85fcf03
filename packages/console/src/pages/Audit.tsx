import { useState } from "react";
import { Pager, useCursor } from "../components/Pager";
import { AccessTabs } from "../components/AccessTabs";
import { Empty, ErrorNote } from "../components/Status";
import { Time, Zone } from "../components/Time";
import { shortId } from "../format";
import { useApi } from "../hooks";
import { fill, useI18n } from "../i18n";
import { Link } from "../router";
import { useSession } from "../session";
import type { AuditEntry } from "../types";

const PAGE = 50;
/** The families of audited actions, as the filter offers them (`run` is run.trigger, run.cancel, run.rerun). */
const FAMILIES = ["run", "backfill", "config", "schedule", "flow", "alerts", "token"] as const;

/** Actions whose target is a flow (the API's `:flow`), and those whose target is a run id. */
const ON_FLOW = new Set(["run.trigger", "backfill.create", "schedule.pause", "schedule.resume", "flow.retire"]);
const ON_RUN = new Set(["run.cancel", "run.rerun"]);

/** Where an entry's target lives in the console, for the actions whose target has a page. */
function targetPath(e: AuditEntry): string | undefined {
  if (!e.target) return undefined;
  if (ON_RUN.has(e.action)) return `/runs/${encodeURIComponent(e.target)}`;
  if (ON_FLOW.has(e.action)) return `/flows/${encodeURIComponent(e.target)}`;
  if (e.action === "config.apply" || e.action === "config.rollback") return "/config";
  return undefined;
}

/** An entry's detail on one line; a long one opens on a click (as JSON), so each row stays a row. */
const SHORT_DETAIL = 80;

/** The run a call made (a trigger's, a rerun's), linked, then the rest of what the API answered. */
function Detail({ detail }: { detail: unknown }) {
  if (detail === null || typeof detail !== "object" || Object.keys(detail).length === 0) return null;
  const { runId, ...rest } = detail as Record<string, unknown>;
  const text = Object.entries(rest)
    .map(([key, value]) => `${key}: ${typeof value === "string" ? value : JSON.stringify(value)}`)
    .join(" · ");
  return (
    <>
      {typeof runId === "string" && (
        <Link to={`/runs/${encodeURIComponent(runId)}`} className="mono small au-run">
          run {shortId(runId)}
        </Link>
      )}{" "}
      {text.length <= SHORT_DETAIL ? (
        <span className="mono small">{text}</span>
      ) : (
        <details className="audit-detail expandable small">
          <summary>
            <span className="mono short">{text}</span>
          </summary>
          <pre className="mono full">{JSON.stringify(rest, null, 2)}</pre>
        </details>
      )}
    </>
  );
}

/** Who did what through the API and the CLI, newest first: triggers, cancels, reruns, config, schedules, flow retirements, tokens, mutes. */
export function AuditPage() {
  const { t } = useI18n();
  const session = useSession();
  // The log is for admins: a smaller token is told so instead of asking for a 403.
  const refused = session?.auth === true && session.scope !== "admin";
  const pages = useCursor();
  const [family, setFamily] = useState("");
  const [actor, setActor] = useState("");
  const query = new URLSearchParams({ limit: String(PAGE) });
  if (pages.cursor !== undefined) query.set("before", String(pages.cursor));
  if (family) query.set("action", family);
  if (actor.trim()) query.set("actor", actor.trim());
  const audit = useApi<{ entries: AuditEntry[] }>(refused ? undefined : `/api/audit?${query}`, 5000);
  // A new filter reads from the newest entry again.
  const filter = (set: (value: string) => void) => (value: string) => {
    set(value);
    pages.newest();
  };
  const list = audit.data?.entries ?? [];
  return (
    <>
      <h1>{t("audit")}</h1>
      <AccessTabs current="audit" />
      {refused ? (
        <Empty>{fill(t("audit.needsAdmin"), { scope: session.scope })}</Empty>
      ) : (
        <>
          <div className="filters audit-filters">
            <label>
              {t("audit.action")}
              <select name="auditAction" value={family} onChange={(e) => filter(setFamily)(e.target.value)}>
                <option value="">{t("audit.everyAction")}</option>
                {FAMILIES.map((f) => (
                  <option key={f} value={f}>
                    {f}.*
                  </option>
                ))}
              </select>
            </label>
            <label>
              {t("audit.actor")}
              <input name="auditActor" value={actor} placeholder="ops_dashboard" onChange={(e) => filter(setActor)(e.target.value)} />
            </label>
          </div>
          <ErrorNote error={audit.error} />
          {audit.data && list.length === 0 ? (
            <Empty>{t(family || actor.trim() ? "audit.noMatch" : "audit.empty")}</Empty>
          ) : (
            <div className="table-wrap">
              <table className="table audit">
                <thead>
                  <tr>
                    <th>
                      {t("audit.at")} <Zone />
                    </th>
                    <th>{t("audit.actor")}</th>
                    <th>{t("audit.action")}</th>
                    <th>{t("audit.target")}</th>
                    <th>{t("audit.detail")}</th>
                    <th>{t("audit.ip")}</th>
                  </tr>
                </thead>
                <tbody>
                  {list.map((e) => {
                    const to = targetPath(e);
                    return (
                      <tr key={e.id} data-audit={e.id}>
                        <td className="muted nowrap">
                          <Time iso={e.at} />
                        </td>
                        <td className="au-actor">{e.actor}</td>
                        <td className="au-action mono small">{e.action}</td>
                        <td className="au-target mono small">{to ? <Link to={to}>{e.target}</Link> : e.target}</td>
                        <td className="au-detail">
                          <Detail detail={e.detail} />
                        </td>
                        <td className="muted small nowrap">{e.ip}</td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </div>
          )}
          <Pager
            cursor={pages}
            ids={list.map((e) => e.id)}
            pageSize={PAGE}
            labels={{ newest: t("audit.newest"), older: t("audit.older") }}
          />
        </>
      )}
    </>
  );
}
