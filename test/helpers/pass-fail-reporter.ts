import type { Reporter } from "vitest/reporters";

interface TaskLike {
  type: string;
  mode?: string;
  result?: { state?: string };
  tasks?: TaskLike[];
}

/** Ends the run with the plain `N passed, N failed` line that CI reads, after vitest's own summary. */
export default class PassFailReporter implements Reporter {
  onFinished(files: TaskLike[] = []): void {
    const counts = { passed: 0, failed: 0, skipped: 0 };
    const visit = (task: TaskLike) => {
      if (task.tasks) task.tasks.forEach(visit);
      if (task.type !== "test") return;
      if (task.result?.state === "pass") counts.passed += 1;
      else if (task.result?.state === "fail") counts.failed += 1;
      else counts.skipped += 1;
    };
    files.forEach(visit);
    // A file that failed to load has no tests but must still count as a failure.
    counts.failed += files.filter((f) => f.result?.state === "fail" && !f.tasks?.length).length;
    console.log(`\n${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`);
  }
}
