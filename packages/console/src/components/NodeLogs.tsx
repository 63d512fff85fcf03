import { useEffect, useLayoutEffect, useRef, useState } from "react";
import { api } from "../api";
import { dateTime } from "../format";
import { useI18n } from "../i18n";
import type { LogLine } from "../types";
import { Zone } from "./Time";

/** How often a running node's panel asks for its new log lines. */
const FOLLOW_MS = 1500;

/**
 * A node's lines from GET /api/runs/:id/logs; a server without that route (404) shows the empty
 * state. While the node runs or waits to retry, the lines its latest attempt logs after the last
 * one shown are fetched every FOLLOW_MS (`attempt=&after=`) and appended.
 */
export function NodeLogs({ runId, node, attempt, following }: { runId: string; node: string; attempt: number; following: boolean }) {
  const { t } = useI18n();
  const [lines, setLines] = useState<LogLine[]>([]);
  const [truncated, setTruncated] = useState(false);
  const followed = useRef(false);
  const box = useRef<HTMLDivElement>(null);
  // Follow the tail while the reader is at it; someone scrolled up to read keeps their place.
  const pinned = useRef(true);
  useEffect(() => {
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const all = `/api/runs/${runId}/logs?node=${encodeURIComponent(node)}`;
    // Lines are stored in batches shortly after they are logged: a node seen ending gets one more look.
    let looks = following ? Number.POSITIVE_INFINITY : followed.current ? 2 : 1;
    followed.current = following;
    let shown: LogLine[] = [];
    const load = async (first: boolean) => {
      const after = Math.max(0, ...shown.filter((l) => l.attempt === attempt).map((l) => l.seq));
      const path = first || !following ? all : `${all}&attempt=${attempt}&after=${after}`;
      try {
        const answer = await api.get<{ lines: LogLine[]; truncated: { node: string; attempt: number }[] }>(path);
        if (!live) return;
        shown = path === all ? answer.lines : [...shown, ...answer.lines];
        setLines(shown);
        if (path === all || answer.truncated.length > 0) setTruncated(answer.truncated.length > 0);
      } catch {
        if (live && path === all) {
          shown = [];
          setLines(shown);
        }
      }
      if (live && --looks > 0) timer = setTimeout(() => void load(false), FOLLOW_MS);
    };
    void load(true);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [runId, node, attempt, following]);
  // biome-ignore lint/correctness/useExhaustiveDependencies: new lines are what moves the tail
  useLayoutEffect(() => {
    if (following && pinned.current && box.current) box.current.scrollTop = box.current.scrollHeight;
  }, [lines, following]);
  const heading = (
    <h3>
      {t("node.logs")} {lines.length > 0 && <Zone />} {following && <span className="live">{t("run.live")}</span>}
    </h3>
  );
  if (lines.length === 0)
    return (
      <>
        {heading}
        <p className="muted">{t("node.noLogs")}</p>
      </>
    );
  return (
    <>
      {heading}
      <div
        className="logs"
        ref={box}
        onScroll={(e) => {
          const el = e.currentTarget;
          pinned.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
        }}
      >
        {lines.map((l) => (
          <div key={`${l.attempt}:${l.seq}`} className={`log l-${l.level}`}>
            <span className="muted at" title={l.at}>
              {dateTime(l.at)}
            </span>
            <span className="mono">#{l.attempt}</span>
            <span className="lvl">{l.level}</span>
            <span className="msg">{l.msg}</span>
            {l.fields && <span className="muted mono fields">{JSON.stringify(l.fields)}</span>}
          </div>
        ))}
        {truncated && <div className="muted small">…</div>}
      </div>
    </>
  );
}
