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
const merge = ax.task({ name: "tr_merge", retries: 0 }, (a: number, b: number) => a + b);
/** tr_left and tr_right both feed tr_merge: a fan-in. */
const join = ax.flow({ name: "tr_join" }, () => {
  merge(left(1), right(2));
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
    runtime = testRuntime(env, { flows: [chain, twins, join], roles: ["coordinator"] });
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
    const [headDone] = await completeAttempts(store.db, "worker-a", [
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

    const [rightDone] = await completeAttempts(store.db, "worker-a", [{ ...rightRef, result: 1, downstream: [] }]);
    expect(rightDone).toEqual({ applied: true, ready: [], runFinished: "success" });
    expect(await runRow(runId)).toEqual({ status: "success", nodes_remaining: 0, blocking_failures: 0 });
  });

  it("a completion and a failure of the same run racing 20 times: no deadlock, the run finishes exactly once", async () => {
    for (let i = 0; i < 20; i++) {
      const runId = await client.triggerFlow("tr_twins", null);
      const leftRef = await start(runId, "tr_left");
      const rightRef = await start(runId, "tr_right");
      const [[completed], failed] = await Promise.all([
        completeAttempts(store.db, "worker-a", [{ ...leftRef, result: 1, downstream: [] }]),
        failNode(store.db, { ...rightRef, outcome: "failed", error: failure, descendants: [], blocking: true }),
      ]);
      expect(completed?.applied).toBe(true);
      expect(failed.applied).toBe(true);
      expect([completed?.runFinished, failed.runFinished].filter((s) => s !== null)).toEqual(["failed"]);
      expect(await runRow(runId)).toEqual({ status: "failed", nodes_remaining: 0, blocking_failures: 1 });
    }
  });

  it("one start statement taking both roots of a run says once that it started the run", async () => {
    const runId = await client.triggerFlow("tr_twins", null);
    const answers = await startAttempts(store.db, "worker-a", [
      { runId, nodeKey: "tr_left", attempt: 1, upstreamKeys: [] },
      { runId, nodeKey: "tr_right", attempt: 1, upstreamKeys: [] },
    ]);
    expect(answers.map((a) => a?.runStarted)).toEqual([true, false]);
    expect((await runRow(runId))?.status).toBe("running");
  });

  it("a cancel racing a completion of the same run: whichever commits first wins, and the other changes nothing", async () => {
    for (let i = 0; i < 20; i++) {
      const runId = await client.triggerFlow("tr_twins", null);
      const leftRef = await start(runId, "tr_left");
      const [[completed], cancelled] = await Promise.all([
        completeAttempts(store.db, "worker-a", [{ ...leftRef, result: 1, downstream: [] }]),
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

  const attemptsOf = async (runId: string, nodeKey: string) =>
    env.sql<{ n: number; worker: string; finished: boolean }>(
      "select n, worker, finished_at is not null as finished from attempts where run_id = $1 and node_key = $2 order by n",
      [runId, nodeKey],
    );

  it("a completion naming a dependant it makes ready starts it under its worker, with its upstream results", async () => {
    const runId = await client.triggerFlow("tr_chain", null);
    const headRef = await start(runId, "tr_head");
    const [headDone] = await completeAttempts(store.db, "worker-a", [
      { ...headRef, result: 41, downstream: ["tr_left", "tr_right"], continueWith: { nodeKey: "tr_left", upstreamKeys: ["tr_head"] } },
    ]);
    expect(headDone?.ready.map((n) => n.nodeKey)).toEqual(["tr_right"]);
    expect(headDone?.continued).toMatchObject({ nodeKey: "tr_left", attempt: 1, flow: "tr_chain", upstream: { tr_head: 41 } });
    expect((await nodeStatuses(runId)).tr_left).toBe("running");
    expect(await attemptsOf(runId, "tr_left")).toEqual([{ n: 1, worker: "worker-a", finished: false }]);
    // The started attempt completes like any other, and is not started a second time by a fence.
    expect((await startAttempts(store.db, "worker-b", [{ runId, nodeKey: "tr_left", attempt: 1, upstreamKeys: [] }]))[0]).toBeUndefined();
    const [leftDone] = await completeAttempts(store.db, "worker-a", [
      {
        runId,
        nodeKey: "tr_left",
        attempt: 1,
        result: 42,
        downstream: ["tr_tail"],
        continueWith: { nodeKey: "tr_tail", upstreamKeys: ["tr_left"] },
      },
    ]);
    expect(leftDone?.continued).toMatchObject({ nodeKey: "tr_tail", upstream: { tr_left: 42 } });
  });

  it("a fan-in starts with its completions only when they all come in one statement; otherwise it is queued", async () => {
    const apart = await client.triggerFlow("tr_join", null);
    const wantTail = { nodeKey: "tr_merge", upstreamKeys: ["tr_left", "tr_right"] };
    const [leftFirst] = await completeAttempts(store.db, "worker-a", [
      { ...(await start(apart, "tr_left")), result: "L", downstream: ["tr_merge"], continueWith: wantTail },
    ]);
    expect(leftFirst?.continued).toBeUndefined();
    expect((await nodeStatuses(apart)).tr_merge).toBe("pending");
    const [rightLast] = await completeAttempts(store.db, "worker-a", [
      { ...(await start(apart, "tr_right")), result: "R", downstream: ["tr_merge"], continueWith: wantTail },
    ]);
    // tr_left's result came from an earlier statement, which a batch waiting at the run lock may not see.
    expect(rightLast?.continued).toBeUndefined();
    expect(rightLast?.ready.map((n) => n.nodeKey)).toEqual(["tr_merge"]);
    expect((await nodeStatuses(apart)).tr_merge).toBe("queued");

    // Both upstreams in one batch: the dependant starts once, for one of them, with both results from the batch.
    const together = await client.triggerFlow("tr_join", null);
    const [a, b] = await completeAttempts(store.db, "worker-a", [
      { ...(await start(together, "tr_left")), result: "L", downstream: ["tr_merge"], continueWith: wantTail },
      { ...(await start(together, "tr_right")), result: "R", downstream: ["tr_merge"], continueWith: wantTail },
    ]);
    const continued = [a?.continued, b?.continued].filter((c) => c !== undefined);
    expect(continued).toHaveLength(1);
    expect(continued[0]).toMatchObject({ nodeKey: "tr_merge", upstream: { tr_left: "L", tr_right: "R" } });
    expect([...(a?.ready ?? []), ...(b?.ready ?? [])]).toEqual([]);
    expect(await attemptsOf(together, "tr_merge")).toEqual([{ n: 1, worker: "worker-a", finished: false }]);
  });
});
