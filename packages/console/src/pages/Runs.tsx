import { type MouseEvent, useEffect, useRef, useState } from "react";
import { query } from "../api";
import { Empty, ErrorNote, StatusBadge } from "../components/Status";
import { Time, Zone } from "../components/Time";
import { between, shortId } from "../format";
import { useApi } from "../hooks";
import { fill, label, type MessageKey, useI18n } from "../i18n";
import { Link, navigate, useLocation } from "../router";
import type { RunSummary } from "../types";
import { UNFINISHED_RUNS } from "../run-states";

const STATUSES = ["pending", "running", "success", "failed", "cancelled"];
const TRIGGERS = ["manual", "event", "schedule", "rerun", "backfill"];
const FILTERS = ["flow", "status", "trigger", "businessKey", "from", "to"] as const;

/** datetime-local has no zone: the browser's own, sent as ISO with offset. */
const toIso = (local: string | null) => (local ? new Date(local).toISOString() : undefined);

/** A pause in typing this long applies a text filter: each key would otherwise be a request and a history entry. */
const TYPING_MS = 300;

/**
 * A text filter that applies as it is typed, once typing pauses (Enter at once), as the selects
 * apply on change. It follows the address when that changes (clear filters, back).
 */
function TypedFilter({
  caption,
  name,
  value,
  onApply,
  placeholder,
}: {
  caption: string;
  name: string;
  value: string;
  onApply: (value: string) => void;
  /** What the field matches, shown while it is empty. */
  placeholder?: string;
}) {
  const [text, setText] = useState(value);
  const apply = useRef(onApply);
  apply.current = onApply;
  useEffect(() => setText(value), [value]);
  useEffect(() => {
    if (text === value) return;
    const timer = setTimeout(() => apply.current(text), TYPING_MS);
    return () => clearTimeout(timer);
  }, [text, value]);
  return (
    <label>
      {caption}
      <input
        name={name}
        value={text}
        placeholder={placeholder}
        onChange={(e) => setText(e.target.value)}
        onKeyDown={(e) => e.key === "Enter" && text !== value && apply.current(text)}
      />
    </label>
  );
}

export function RunsPage() {
  const { t } = useI18n();
  const location = useLocation();
  const params = location.searchParams;
  // The page's cursor is in the address: a reload keeps the page, Back returns to the one before.
  const cursor = params.get("cursor") ?? undefined;
  const openRun = (e: MouseEvent, to: string) => {
    // The id's own link has navigated, or opened a tab for a modified click: the row must not navigate too.
    if ((e.target as Element).closest("a")) return;
    if (e.ctrlKey || e.metaKey || e.shiftKey) window.open(to, "_blank", "noopener");
    else navigate(to);
  };
  const page = (next: string | undefined) => {
    const q = new URLSearchParams(params);
    if (next) q.set("cursor", next);
    else q.delete("cursor");
    const s = q.toString();
    navigate(`/runs${s ? `?${s}` : ""}`);
  };
  const path = `/api/runs${query({
    flow: params.get("flow") ?? undefined,
    status: params.get("status") ?? undefined,
    trigger: params.get("trigger") ?? undefined,
    businessKey: params.get("businessKey") ?? undefined,
    from: toIso(params.get("from")),
    to: toIso(params.get("to")),
    cursor,
    limit: "50",
  })}`;
  const runs = useApi<{ runs: RunSummary[]; nextCursor: string | null }>(path, cursor ? undefined : 3000);
  const flows = useApi<{ flows: string[] }>("/api/flows");
  const flowFilter = params.get("flow");
  // A flow named in the address that is not deployed (a typo, a removed flow) still shows as the filter in force.
  const unknownFlow = flowFilter && flows.data && !flows.data.flows.includes(flowFilter) ? flowFilter : undefined;
  const filtered = FILTERS.some((f) => params.get(f));
  const set = (key: (typeof FILTERS)[number], value: string) => {
    const next = new URLSearchParams(params);
    if (value) next.set(key, value);
    else next.delete(key);
    next.delete("cursor");
    navigate(`/runs?${next.toString()}`);
  };
  return (
    <>
      <h1>{t("runs")}</h1>
      <div className="filters">
        <label>
          {t("runs.flow")}
          <select name="flow" value={params.get("flow") ?? ""} onChange={(e) => set("flow", e.target.value)}>
            <option value="">{t("runs.any")}</option>
            {unknownFlow && (
              <option value={unknownFlow}>
                {unknownFlow} ({t("runs.unknownFlow")})
              </option>
            )}
            {[...(flows.data?.flows ?? [])].sort().map((f) => (
              <option key={f}>{f}</option>
            ))}
          </select>
        </label>
        <label>
          {t("runs.status")}
          <select name="status" value={params.get("status") ?? ""} onChange={(e) => set("status", e.target.value)}>
            <option value="">{t("runs.any")}</option>
            <option value={UNFINISHED_RUNS}>{t("runs.unfinished")}</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {t(`status.${s}` as MessageKey)}
              </option>
            ))}
          </select>
        </label>
        <label>
          {t("runs.trigger")}
          <select name="trigger" value={params.get("trigger") ?? ""} onChange={(e) => set("trigger", e.target.value)}>
            <option value="">{t("runs.any")}</option>
            {TRIGGERS.map((s) => (
              <option key={s} value={s}>
                {label(t, "triggered", s)}
              </option>
            ))}
          </select>
        </label>
        <TypedFilter
          caption={t("runs.businessKeyFilter")}
          name="businessKey"
          value={params.get("businessKey") ?? ""}
          onApply={(v) => set("businessKey", v)}
          placeholder={t("runs.businessKeyHint")}
        />
        {/* From, To and the clear button wrap to the next line together, none of them alone. */}
        <div className="filter-range">
          <label>
            {t("runs.from")}
            <input type="datetime-local" name="from" value={params.get("from") ?? ""} onChange={(e) => set("from", e.target.value)} />
          </label>
          <label>
            {t("runs.to")}
            <input type="datetime-local" name="to" value={params.get("to") ?? ""} onChange={(e) => set("to", e.target.value)} />
          </label>
          {filtered && (
            <button type="button" className="clear-filters" onClick={() => navigate("/runs")}>
              {t("runs.clear")}
            </button>
          )}
        </div>
      </div>
      <ErrorNote error={runs.error} />
      {runs.data && runs.data.runs.length === 0 ? (
        <Empty>
          {!filtered
            ? t("runs.none")
            : params.get("businessKey")
              ? fill(t("runs.emptyKey"), { key: params.get("businessKey")! })
              : t("runs.empty")}
        </Empty>
      ) : (
        <div className="table-wrap">
          <table className="table runs">
            <thead>
              <tr>
                <th>{t("runs.status")}</th>
                <th>{t("runs.run")}</th>
                <th>{t("runs.flow")}</th>
                <th>{t("runs.trigger")}</th>
                <th>{t("runs.businessKey")}</th>
                <th>
                  {t("runs.created")} <Zone />
                </th>
                <th>{t("runs.duration")}</th>
              </tr>
            </thead>
            <tbody>
              {(runs.data?.runs ?? []).map((r) => (
                <tr key={r.id} onClick={(e) => openRun(e, `/runs/${r.id}`)}>
                  <td className="r-status">
                    <StatusBadge status={r.status} />
                  </td>
                  <td className="r-id">
                    <Link to={`/runs/${r.id}`} className="mono">
                      {shortId(r.id)}
                    </Link>
                  </td>
                  <td className="r-flow">{r.flow}</td>
                  <td className="r-trigger muted">
                    {label(t, "triggered", r.trigger)}
                    {r.logicalDate && (
                      <span className="logical-date" title={t("run.meta.logicalDate")}>
                        {" "}
                        · <Time iso={r.logicalDate} />
                      </span>
                    )}
                  </td>
                  {r.businessKey ? (
                    <td className="r-key">{r.businessKey}</td>
                  ) : (
                    <td className="r-key r-none">
                      <span className="muted">—</span>
                    </td>
                  )}
                  <td className="r-created muted">
                    <Time iso={r.createdAt} />
                  </td>
                  <td className="r-duration muted">{between(r.startedAt, r.finishedAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <div className="pager">
        <button type="button" disabled={!cursor} onClick={() => page(undefined)}>
          {t("runs.newest")}
        </button>
        <button type="button" disabled={!runs.data?.nextCursor} onClick={() => runs.data?.nextCursor && page(runs.data.nextCursor)}>
          {t("runs.more")} →
        </button>
      </div>
    </>
  );
}
