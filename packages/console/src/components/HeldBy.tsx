import { type MessageKey, useI18n } from "../i18n";
import { Link } from "../router";
import { UNFINISHED_RUNS } from "../run-states";

interface Holders {
  /** The runs page's filters that list the runs holding the slots. */
  filters: Record<string, string>;
  label: MessageKey;
}

/**
 * Which runs hold the slots a `waitingFor` waits on: the operator's next question. The slots are
 * anonymous in Redis, so the link lists the runs that can hold them. A flow's own caps are held by
 * that flow's runs: `maxConcurrentRuns` by its admitted, unfinished ones (a run admitted but
 * waiting on a pool is still `pending`, so the link lists pending runs too, the held ones among
 * them), a task's concurrency by its running ones. A pool, the cluster's max_concurrency and the
 * workers' slots are shared by every flow, so their link lists them all.
 */
export function holders(text: string, flow: string): Holders | undefined {
  const running = { status: "running" };
  const unfinished = { status: UNFINISHED_RUNS };
  const key = /^concurrency key (.+) \(\d+\/\d+\)/.exec(text)?.[1];
  if (key) return { filters: { flow, businessKey: key, ...running }, label: "held.byKey" };
  if (/^backfill maxConcurrentRuns\b/.test(text))
    return { filters: { flow, trigger: "backfill", ...unfinished }, label: "held.byBackfill" };
  if (/^maxConcurrentRuns\b/.test(text)) return { filters: { flow, ...unfinished }, label: "held.byFlowRuns" };
  if (/^concurrency\b/.test(text)) return { filters: { flow, ...running }, label: "held.byFlow" };
  if (/^(pool|max_concurrency|worker slots)\b/.test(text)) return { filters: running, label: "held.byAll" };
  return undefined;
}

/** A link to the running runs that hold what `text` (a run's or node's `waitingFor`) waits on, if any. */
export function HeldBy({ text, flow }: { text: string; flow: string }) {
  const { t } = useI18n();
  const held = holders(text, flow);
  if (!held) return null;
  return (
    <span data-held-by={held.label}>
      <Link to={`/runs?${new URLSearchParams(held.filters)}`}>{t(held.label)}</Link>
    </span>
  );
}
