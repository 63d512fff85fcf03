import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, type Client, type Runtime } from "ax-scheduler";
import {
  cancelRunRecords,
  completeAttempts,
  failNode,
  migrate,
  openStore,
  startAttempts,
  type AttemptRef,
  type Store,
  type TaskFailure,
} from "@ax/store";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

const head = ax.task({ name: "tr_head", retries: 0 }, () => 1);
const left = ax.task({ name: "tr_left", retries: 0 }, (n: number) => n);
const right = ax.task({ name: "tr_right", retries: 0 }, (n: number) => n);
const tail = ax.task({ name: "tr_tail", retries: 0 }, (n: number) => n);
/** tr_head -> (tr_left -> tr_tail, tr_right) */
const chain = ax.flow({ name: "tr_chain" }, () => {
  const h = head();
  tail(left(h));
  right(h);
});
const twins = ax.flow({ name: "tr_twins" }, () => {
  left(1);
  right(1);
});

const failure: TaskFailure = { name: "Error", message: "failed by the test", stack: null, kind: "error" };

describe("the attempt transitions, called directly on real PostgreSQL", () => {
  const env = isolate("transitions");
  let runtime: Runtime;
  let client: Client;
  let store: Store;

  const start = async (runId: string, nodeKey: string, worker = "worker-a"): Promise<AttemptRef> => {
    const ref = { runId, nodeKey, attempt: 1 };
    const [started] = await startAttempts(store.db, worker, [{ ...ref, upstreamKeys: [] }]);
    expect(started).toBeDefined();
    return ref;
  };
  const runRow = async (runId: string) =>
    (
      await env.sql<{ status: string; nodes_remaining: number; blocking_failures: number }>(
        "select status, nodes_remaining, blocking_failures from runs where id = $1",
        [runId],
      )
    )[0];
  const nodeStatuses = async (runId: string) =>
    Object.fromEntries(
      (await env.sql<{ node_key: string; status: string }>("select node_key, status from node_runs where run_id = $1", [runId])).map(
        (n) => [n.node_key, n.status],
      ),
    );

  beforeAll(async () => {
    // No worker: the test plays the workers' part through the store.
    runtime = testRuntime(env, { flows: [chain, twins], roles: ["coordinator"] });
    await runtime.start();
    client = runtime.client();
    store = openStore({ url: env.storage });
    await migrate(store);
  });

  afterAll(async () => {
    await store?.close();
    await runtime?.stop();
    await env.cleanup();
  });

  it("a blocking failure skips the descendants, counts them all down and fails the run, once", async () => {
    const runId = await client.triggerFlow("tr_chain", null);
    const ref = await start(runId, "tr_head");
    const descendants = ["tr_left", "tr_right", "tr_tail"];
    const failed = await failNode(store.db, { ...ref, outcome: "failed", error: failure, descendants, blocking: true });
    expect(failed).toEqual({ applied: true, ready: [], runFinished: "failed" });
    expect(await runRow(runId)).toEqual({ status: "failed", nodes_remaining: 0, blocking_failures: 1 });
    expect(await nodeStatuses(runId)).toEqual({ tr_head: "failed", tr_left: "skipped", tr_right: "skipped", tr_tail: "skipped" });

    const again = await failNode(store.db, { ...ref, outcome: "failed", error: failure, descendants, blocking: true });
    expect(again).toEqual({ applied: false, ready: [], runFinished: null });
    expect(await runRow(runId)).toEqual({ status: "failed", nodes_remaining: 0, blocking_failures: 1 });
  });

  it("completions and a non-blocking failure share the count-down: the run ends success when the last node ends", async () => {
    const runId = await client.triggerFlow("tr_chain", null);
    const [headDone] = await completeAttempts(store.db, [
      { ...(await start(runId, "tr_head")), result: 1, downstream: ["tr_left", "tr_right"] },
    ]);
    expect(headDone?.applied).toBe(true);
    expect(headDone?.ready.map((n) => n.nodeKey).sort()).toEqual(["tr_left", "tr_right"]);
    expect(headDone?.runFinished).toBeNull();

    const leftRef = await start(runId, "tr_left");
    const rightRef = await start(runId, "tr_right");
    const leftFailed = await failNode(store.db, {
      ...leftRef,
      outcome: "failed",
      error: failure,
      descendants: ["tr_tail"],
      blocking: false,
    });
    expect(leftFailed).toEqual({ applied: true, ready: [], runFinished: null });
    expect(await runRow(runId)).toEqual({ status: "running", nodes_remaining: 1, blocking_failures: 0 });

    const [rightDone] = await completeAttempts(store.db, [{ ...rightRef, result: 1, downstream: [] }]);
    expect(rightDone).toEqual({ applied: true, ready: [], runFinished: "success" });
    expect(await runRow(runId)).toEqual({ status: "success", nodes_remaining: 0, blocking_failures: 0 });
  });

  it("a completion and a failure of the same run racing 20 times: no deadlock, the run finishes exactly once", async () => {
    for (let i = 0; i < 20; i++) {
      const runId = await client.triggerFlow("tr_twins", null);
      const leftRef = await start(runId, "tr_left");
      const rightRef = await start(runId, "tr_right");
      const [[completed], failed] = await Promise.all([
        completeAttempts(store.db, [{ ...leftRef, result: 1, downstream: [] }]),
        failNode(store.db, { ...rightRef, outcome: "failed", error: failure, descendants: [], blocking: true }),
      ]);
      expect(completed?.applied).toBe(true);
      expect(failed.applied).toBe(true);
      expect([completed?.runFinished, failed.runFinished].filter((s) => s !== null)).toEqual(["failed"]);
      expect(await runRow(runId)).toEqual({ status: "failed", nodes_remaining: 0, blocking_failures: 1 });
    }
  });

  it("a cancel racing a completion of the same run: whichever commits first wins, and the other changes nothing", async () => {
    for (let i = 0; i < 20; i++) {
      const runId = await client.triggerFlow("tr_twins", null);
      const leftRef = await start(runId, "tr_left");
      const [[completed], cancelled] = await Promise.all([
        completeAttempts(store.db, [{ ...leftRef, result: 1, downstream: [] }]),
        cancelRunRecords(store.db, runId, failure),
      ]);
      expect(cancelled).toMatchObject({ found: true, cancelled: true, status: "cancelled" });
      expect(completed?.runFinished).toBeNull();
      const nodes = await nodeStatuses(runId);
      expect(nodes.tr_right).toBe("cancelled");
      expect(nodes.tr_left).toBe(completed?.applied ? "success" : "cancelled");
      expect(await runRow(runId)).toEqual({ status: "cancelled", nodes_remaining: 0, blocking_failures: 0 });
    }
  });
});
