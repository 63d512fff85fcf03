import type { ResolvedTaskOptions } from "../task-definition.js";
import { type ClusterLimits, limitSpecOf } from "./limit-spec.js";

/** What changed in the limits of the served tasks since the last look. */
export interface LimitChange {
  /** Tasks whose task-wide limits changed: a queue waiting on the old ones is looked at again. */
  changed: string[];
  /** Tasks whose rate limit per key lets more through than before (raised, a shorter window, removed). */
  rateKeyLoosened: ResolvedTaskOptions[];
}

type RateKey = ResolvedTaskOptions["rateLimitKey"];

/**
 * Remembers the limits each served task had at the last look (at start, then after each config
 * version applied). A queue refused by a rate limit
 * waits until the window lets the next start through, and a job refused by a rate limit per key
 * is delayed as long: both were computed by the old limit, so a limit raised or removed by live
 * configuration would otherwise keep them waiting for up to its whole window.
 */
export class LimitChanges {
  private readonly specs = new Map<string, string>();
  private readonly rateKeys = new Map<string, RateKey>();

  /** The first look only records: nothing waits on a limit this process has not seen. */
  look(tasks: readonly ResolvedTaskOptions[], cluster: ClusterLimits): LimitChange {
    const change: LimitChange = { changed: [], rateKeyLoosened: [] };
    for (const task of tasks) {
      const spec = JSON.stringify(limitSpecOf(task, cluster));
      const before = this.specs.get(task.name);
      if (before !== undefined && before !== spec) change.changed.push(task.name);
      this.specs.set(task.name, spec);
      if (this.rateKeys.has(task.name) && loosened(this.rateKeys.get(task.name) ?? null, task.rateLimitKey)) {
        change.rateKeyLoosened.push(task);
      }
      this.rateKeys.set(task.name, task.rateLimitKey);
    }
    return change;
  }
}

function loosened(before: RateKey, now: RateKey): boolean {
  if (!before) return false;
  return !now || now.max > before.max || now.perMs < before.perMs;
}
