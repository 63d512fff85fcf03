import { time } from "../format";
import { Link } from "../router";
import type { RunSummary } from "../types";

/** Recent runs oldest to newest, one coloured cell each. */
export function RunStrip({ runs }: { runs: RunSummary[] }) {
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
