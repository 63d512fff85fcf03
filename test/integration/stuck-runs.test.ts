import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrate, openStore, stuckRuns, type Store } from "@ax/store";
import { isolate } from "../helpers/isolated.js";

/** The stuck-running alert reads its runs per flow: a flow with many stuck runs must not hide another's. */
describe("stuck runs, per flow", () => {
  const env = isolate("stuck");
  let store: Store;

  beforeAll(async () => {
    store = openStore({ url: env.storage });
    await migrate(store);
    // 105 runs of one flow stuck for an hour, and one of another stuck for a minute (the youngest of all).
    await env.sql(`
      insert into runs (id, flow, flow_version_id, status, trigger, nodes_remaining, started_at)
      select gen_random_uuid(), 'noisy', 1, 'running', 'api', 1, now() - interval '1 hour' + make_interval(secs => i)
      from generate_series(1, 105) i`);
    await env.sql(`
      insert into runs (id, flow, flow_version_id, status, trigger, nodes_remaining, started_at)
      values (gen_random_uuid(), 'quiet', 1, 'running', 'api', 1, now() - interval '1 minute'),
        (gen_random_uuid(), 'quiet', 1, 'success', 'api', 0, now() - interval '2 hours')`);
  });

  afterAll(async () => {
    await store?.close();
    await env.cleanup();
  });

  it("lists the oldest 100 of each flow with the flow's whole count, so the quiet flow's run is there", async () => {
    const found = await stuckRuns(store.db, 30_000);
    const noisy = found.filter((r) => r.flow === "noisy");
    const quiet = found.filter((r) => r.flow === "quiet");
    expect(noisy).toHaveLength(100);
    expect(new Set(noisy.map((r) => r.stuckInFlow))).toEqual(new Set([105]));
    expect(noisy.map((r) => r.startedAt.getTime())).toEqual(noisy.map((r) => r.startedAt.getTime()).sort((a, b) => a - b));
    expect(quiet).toMatchObject([{ stuckInFlow: 1 }]);
    expect(await stuckRuns(store.db, 600_000)).toHaveLength(100);
  });
});
