import { afterAll, describe, expect, it } from "vitest";
import { ax, axLogger, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { captured } from "../helpers/log-capture.js";
import { testRuntime } from "../helpers/runtime.js";

const shared = ax.task({ name: "shared_prefix_task" }, () => "done");
const sharedFlow = ax.flow({ name: "shared_prefix_flow" }, () => {
  shared();
});

interface Line {
  level: number;
  msg: string;
  runId?: string;
  prefix?: string;
  heldBack?: number;
}

/**
 * Two clusters, each with its own PostgreSQL history, on one Redis prefix (two `ax dev`s or two
 * deployments left on the default `ax`): each worker takes the other's jobs and can only drop
 * them, and the runs stall until a reconciler re-adds the jobs. The worker says so.
 */
describe("a worker that fetches a job of another history on its Redis prefix", { timeout: 60_000 }, () => {
  const mine = isolate("sharedmine");
  const theirs = isolate("sharedtheirs");
  const runtimes: Runtime[] = [];

  afterAll(async () => {
    await Promise.all(runtimes.map((r) => r.stop()));
    await mine.cleanup();
    await theirs.cleanup();
  });

  it("drops it with a warning naming the prefix and what to change", async () => {
    // Their run is written to their history and its job to the shared prefix; they run no worker.
    const producer = testRuntime(theirs, { flows: [sharedFlow], roles: ["coordinator"] });
    runtimes.push(producer);
    await producer.start();
    const runId = await producer.client().triggerFlow("shared_prefix_flow", null);

    const log = captured();
    const worker = testRuntime(
      { ...mine, prefix: theirs.prefix },
      { flows: [sharedFlow], roles: ["worker"], logger: axLogger({ level: "warn" }, log.stream) },
    );
    runtimes.push(worker);
    await worker.start();

    const warning = async () =>
      log.lines
        .map((line) => JSON.parse(line) as Line)
        .find((l) => l.msg.startsWith("dropped a job whose run is not in this worker's history"));
    await expect.poll(warning, { timeout: 20_000 }).toBeDefined();
    const found = (await warning())!;
    expect(found).toMatchObject({ level: 40, runId, prefix: theirs.prefix });
    expect(found.heldBack).toBeUndefined();
    expect(found.msg).toContain(`uses the same Redis prefix "${theirs.prefix}"`);
    expect(found.msg).toContain("give each history its own prefix (--prefix / AX_PREFIX");
    // Their history still has the run, not started: nothing of it was written to ours.
    expect(await theirs.sql("select status from runs where id = $1", [runId])).toEqual([{ status: "pending" }]);
    expect(await mine.sql("select count(*)::int as n from runs")).toEqual([{ n: 0 }]);
  });
});
