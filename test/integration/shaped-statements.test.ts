import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ax, type Runtime } from "ax-scheduler";
import {
  completeAttempts,
  createRuns,
  currentFlowVersion,
  migrate,
  openStore,
  registerFlowVersion,
  startAttempts,
  waitingNodeInputs,
  type FlowVersion,
  type Store,
} from "@ax/store";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

const head = ax.task({ name: "shaped_head" }, (n: number) => n);
const tail = ax.task({ name: "shaped_tail" }, (n: number) => n);
const pair = ax.flow({ name: "shaped_pair" }, (input) => {
  tail(head(input));
});

/**
 * Batch sizes in the order they are written: each size twice, and sizes that share a bucket of
 * the statements' text (3 and 4, 5 and 9) next to sizes that do not, so that a text rendered for
 * one shape and reused for another would drop or mix up items.
 */
const SIZES = [1, 1, 2, 3, 4, 4, 5, 9, 2, 16, 17, 3];

/** Every hot statement of a run of two nodes, one batch of `size` runs at a time; each item must get its own answer. */
async function runBatches(target: Store, flow: FlowVersion): Promise<void> {
  let seq = 0;
  for (const size of SIZES) {
    const runs = Array.from({ length: size }, () => ({ id: randomUUID(), n: seq++ }));
    const created = await createRuns(
      target.db,
      runs.map((r) => ({ id: r.id, flow, trigger: "manual" as const, payload: r.n, idempotencyKey: `k-${r.n}` })),
    );
    expect(created.map((c) => c.created && c.runId)).toEqual(runs.map((r) => r.id));

    const heads = runs.map((r) => ({ runId: r.id, nodeKey: "shaped_head", attempt: 1, upstreamKeys: [] as string[] }));
    const inputs = await waitingNodeInputs(target.db, heads);
    expect(inputs.map((i) => i?.payload)).toEqual(runs.map((r) => r.n));

    const started = await startAttempts(target.db, "shaped-worker", heads);
    expect(started.map((s) => s?.payload)).toEqual(runs.map((r) => r.n));
    expect(started.every((s) => s?.runStarted)).toBe(true);

    const advanced = await completeAttempts(
      target.db,
      "shaped-worker",
      runs.map((r) => ({ runId: r.id, nodeKey: "shaped_head", attempt: 1, result: r.n * 10, downstream: ["shaped_tail"] })),
    );
    expect(advanced.map((a) => [a.applied, a.ready.map((n) => `${n.runId}/${n.nodeKey}`)])).toEqual(
      runs.map((r) => [true, [`${r.id}/shaped_tail`]]),
    );

    const tails = runs.map((r) => ({ runId: r.id, nodeKey: "shaped_tail", attempt: 1, upstreamKeys: ["shaped_head"] }));
    const tailStarts = await startAttempts(target.db, "shaped-worker", tails);
    expect(tailStarts.map((s) => s?.upstream)).toEqual(runs.map((r) => ({ shaped_head: r.n * 10 })));

    const finished = await completeAttempts(
      target.db,
      "shaped-worker",
      runs.map((r) => ({ runId: r.id, nodeKey: "shaped_tail", attempt: 1, result: r.n, downstream: [] })),
    );
    expect(finished.map((a) => a.runFinished)).toEqual(runs.map(() => "success"));
  }
}

describe("hot statements rendered once per shape answer every item of every batch size", () => {
  const env = isolate("shaped");
  let runtime: Runtime;
  let store: Store;

  beforeAll(async () => {
    runtime = testRuntime(env, { flows: [pair], roles: ["coordinator"] });
    await runtime.start();
    await runtime.stop();
    // One connection: every statement after the first of its shape runs as that connection's prepared statement.
    store = openStore({ url: env.storage, poolSize: 1 });
  });

  afterAll(async () => {
    await store?.close();
    await env.cleanup();
  });

  it("on a PostgreSQL server (prepared statements)", async () => {
    await runBatches(store, (await currentFlowVersion(store.db, "shaped_pair"))!);
  });

  it("on embedded PGlite (the same statements with their values inline)", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "ax-shaped-"));
    const embedded = openStore({ dataDir });
    try {
      await migrate(embedded);
      const dag = (await currentFlowVersion(store.db, "shaped_pair"))!.dag;
      await runBatches(embedded, await registerFlowVersion(embedded.db, dag, "shaped-test"));
    } finally {
      await embedded.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
    // PGlite's first start (WASM, initdb, migrations) takes a while on a busy machine.
  }, 180_000);
});
