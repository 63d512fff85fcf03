import { useI18n } from "../i18n";
import { time } from "../format";
import { Link } from "../router";
import type { RunSummary } from "../types";

/** Recent runs oldest to newest, one coloured cell each. */
export function RunStrip({ runs }: { runs: RunSummary[] }) {
  const { t } = useI18n();
  if (runs.length === 0) return <div className="strip-empty muted small">{t("flows.noRuns")}</div>;
  return (
    <div className="strip">
      {[...runs].reverse().map((r) => (
        <Link key={r.id} to={`/runs/${r.id}`} className={`cell s-${r.status}`}>
          <span title={`${r.status} · ${time(r.createdAt)}`} />
        </Link>
      ))}
    </div>
  );
}
