import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * The files that take longest, longest first, as a fresh-clone CI run on a 2-core machine measured
 * them (each 40 s or more). A fresh clone has no vitest cache of durations, so without this the
 * files start in directory order, and a long one picked up last runs alone at the end of the run:
 * the bench smoke test (70 s) ended a 14-minute run that way. Started first, the short files fill
 * the processes around them. A file missing here is only scheduled later, never skipped.
 */
const SLOW_FIRST = [
  "test/integration/pack-install.test.ts",
  "test/integration/embedded-lock.test.ts",
  "test/integration/executors.test.ts",
  "test/browser/console-layout.test.ts",
  "test/browser/console.test.ts",
  "test/integration/cli-config.test.ts",
  "test/integration/shutdown.test.ts",
  "test/integration/backfills.test.ts",
  "test/integration/bench-smoke.test.ts",
  "test/integration/alerts.test.ts",
  "test/integration/cli-producer.test.ts",
  "test/integration/pg-restart.test.ts",
  "test/integration/cli.test.ts",
  "test/integration/retention.test.ts",
  "test/integration/chaos.test.ts",
  "test/browser/console-auth.test.ts",
  "test/integration/producer-trigger.test.ts",
  "test/integration/schedules.test.ts",
  "test/integration/live-limits.test.ts",
  "test/integration/signal-stop.test.ts",
];

export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const at = SLOW_FIRST.findIndex((path) => spec.moduleId.endsWith(`/${path}`));
      return at === -1 ? SLOW_FIRST.length : at;
    };
    // Array.prototype.sort is stable: the rest keep the base order (durations vitest cached locally).
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}
