import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Client } from "ax-scheduler";
import {
  burstFlow,
  latestFlow,
  newestFlow,
  newestPairFlow,
  ratedKeyFlow,
  ratedNextFlow,
  ratedSlowFlow,
  syncFlow,
} from "../fixtures/keyed-limits.js";
import { isolate } from "../helpers/isolated.js";
import { maxOverlap, waitUntil, type Span } from "../helpers/limits.js";
import { startCliCluster, type CliCluster } from "../helpers/cli-cluster.js";

function byKey<T extends { key: string }>(spans: T[]): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const span of spans) groups.set(span.key, [...(groups.get(span.key) ?? []), span]);
  return groups;
}

describe("limits per business key across two worker processes (CLI, 10 attempts each)", () => {
  const env = isolate("keyed");
  let cluster: CliCluster;
  let client: Client;

  /** Finished attempts of `task` with the key of their run's payload. */
  async function keyedSpans(task: string): Promise<(Span & { key: string; runId: string })[]> {
    const found = await env.sql<{ key: string; run_id: string; worker: string; start: number; end: number }>(
      `select r.payload->>'user_id' as key, r.id as run_id, a.worker,
         extract(epoch from a.started_at) * 1000 as start, extract(epoch from a.finished_at) * 1000 as "end"
       from attempts a join node_runs n on n.run_id = a.run_id and n.node_key = a.node_key join runs r on r.id = a.run_id
       where n.task = $1 and a.finished_at is not null`,
      [task],
    );
    return found.map((r) => ({ task, key: r.key, runId: r.run_id, worker: r.worker, start: Number(r.start), end: Number(r.end) }));
  }

  beforeAll(async () => {
    cluster = await startCliCluster(
      env,
      "test/fixtures/keyed-limits.ts",
      [syncFlow, burstFlow, newestFlow, newestPairFlow, latestFlow, ratedKeyFlow, ratedSlowFlow, ratedNextFlow],
      [],
    );
    client = cluster.client;
  }, 60_000);

  afterAll(async () => {
    await cluster?.stop();
    await env.cleanup();
  });

  it("concurrency { max: 1, key }: 200 runs over 20 keys, never two of one key at once, many keys at once", async () => {
    // Each key's 10 runs one after the other in the queue: the second and later of a key are
    // fetched while its first runs, so they wait parked and say why.
    const payloads = Array.from({ length: 200 }, (_, i) => ({ user_id: `user_${Math.floor(i / 10)}`, i }));
    const runIds = await client.triggerFlows("sync_order", payloads);
    const reasons = new Set<string>();
    await waitUntil(async () => {
      const runs = await Promise.all(runIds.slice(0, 20).map((id) => client.getRun(id)));
      for (const run of runs) if (run.tasks[0]!.waitingFor) reasons.add(run.tasks[0]!.waitingFor);
      return reasons.size > 0 || runs.every((r) => r.status === "success");
    }, 20_000);
    for (const id of runIds) expect((await client.waitForRun(id, { timeout: "60s" })).status).toBe("success");

    const spans = await keyedSpans("sync_order");
    expect(spans).toHaveLength(200);
    for (const [key, list] of byKey(spans)) expect(maxOverlap(list), key).toBe(1);
    // Distinct keys running at one instant: every span is one key, and a key never overlaps itself.
    const keysAtOnce = maxOverlap(spans);
    console.log(`200 runs over 20 keys: at most ${keysAtOnce} keys at once; waiting nodes said ${JSON.stringify([...reasons])}`);
    expect(keysAtOnce).toBeGreaterThanOrEqual(10);
    expect(new Set(spans.map((s) => s.worker)).size).toBe(2);
    expect(reasons.size).toBeGreaterThan(0);
    for (const reason of reasons) expect(reason).toMatch(/^concurrency key user_\d+ \(1\/1\)$/);
  });

  it("cancel_newest: a run whose key is busy ends cancelled with the reason; the running one goes on", async () => {
    const first = await client.triggerFlow("sync_newest", { user_id: "u_newest" });
    await waitUntil(async () => (await client.getRun(first)).tasks[0]!.status === "running", 10_000);
    const second = await client.triggerFlow("sync_newest", { user_id: "u_newest" });
    const other = await client.triggerFlow("sync_newest", { user_id: "u_other" });
    const dropped = await client.waitForRun(second, { timeout: "20s" });
    expect(dropped.status).toBe("cancelled");
    expect(dropped.tasks[0]!.error?.message).toContain("concurrency key u_newest (1/1) was busy: strategy cancel_newest");
    expect((await client.waitForRun(first, { timeout: "20s" })).status).toBe("success");
    expect((await client.waitForRun(other, { timeout: "20s" })).status).toBe("success");
  });

  it("cancel_newest: two nodes of one run on one key take turns; the run is not cancelled by its own node", async () => {
    const runId = await client.triggerFlow("sync_newest_pair", { user_id: "u_pair" });
    const run = await client.waitForRun(runId, { timeout: "20s" });
    expect(run.status).toBe("success");
    expect(run.tasks.map((t) => t.status)).toEqual(["success", "success"]);
    const spans = await keyedSpans("sync_newest_pair");
    expect(spans).toHaveLength(2);
    expect(maxOverlap(spans)).toBe(1);
  });

  it("cancel_in_progress: a new run cancels the one holding its key, then starts", async () => {
    const first = await client.triggerFlow("sync_latest", { user_id: "u_latest" });
    await waitUntil(async () => (await client.getRun(first)).tasks[0]!.status === "running", 10_000);
    const second = await client.triggerFlow("sync_latest", { user_id: "u_latest" });
    const superseded = await client.waitForRun(first, { timeout: "20s" });
    expect(superseded.status).toBe("cancelled");
    expect(superseded.tasks[0]!.error?.message).toContain(`superseded by run ${second} on concurrency key u_latest (1/1)`);
    const winner = await client.waitForRun(second, { timeout: "20s" });
    expect(winner.status).toBe("success");
    expect(Date.parse(winner.tasks[0]!.attempts[0]!.startedAt)).toBeGreaterThanOrEqual(
      Date.parse(superseded.tasks[0]!.attempts[0]!.finishedAt!),
    );
  });

  it("cancel_in_progress: of a burst of runs of one key, only the newest runs, whichever job reaches a worker first", async () => {
    const first = await client.triggerFlow("sync_latest", { user_id: "u_burst" });
    await waitUntil(async () => (await client.getRun(first)).tasks[0]!.status === "running", 10_000);
    for (const burst of [
      await client.triggerFlows(
        "sync_latest",
        Array.from({ length: 4 }, () => ({ user_id: "u_burst" })),
      ),
      // No run holds this key: the jobs of the burst race for it across both processes.
      await client.triggerFlows(
        "sync_latest",
        Array.from({ length: 5 }, () => ({ user_id: "u_burst2" })),
      ),
    ]) {
      const newest = burst.at(-1)!;
      expect((await client.waitForRun(newest, { timeout: "20s" })).status).toBe("success");
      for (const id of burst.slice(0, -1)) {
        const run = await client.waitForRun(id, { timeout: "20s" });
        expect(run.status, id).toBe("cancelled");
        expect(run.tasks[0]!.error?.message, id).toMatch(
          /superseded by run [0-9a-f-]{36} on concurrency key u_burst2? \(1\/1\): strategy cancel_in_progress/,
        );
      }
    }
    expect((await client.getRun(first)).status).toBe("cancelled");
    // Never two attempts of one key at once.
    for (const [key, spans] of byKey((await keyedSpans("sync_latest")).filter((s) => s.key.startsWith("u_burst")))) {
      expect(maxOverlap(spans), key).toBe(1);
    }
  });

  it("rateLimit { max: 2, per: 1s, key }: at most 2 starts per key per second, in trigger order, while other keys proceed", async () => {
    const payloads = ["r1", "r2", "r3"].flatMap((user_id) => Array.from({ length: 6 }, (_, i) => ({ user_id, i })));
    const triggeredAt = Date.now();
    const runIds = await client.triggerFlows("rated_key", payloads);
    // Jobs held back by a key's rate limit wait in the delayed set; ax queues says which limit holds them.
    let limited: string | null = null;
    await waitUntil(async () => {
      limited = (await client.listQueues()).find((q) => q.task === "rated_key")?.limited ?? null;
      return limited !== null;
    }, 10_000);
    expect(limited).toMatch(/^rate limit key: \d+ runs? delayed on [1-3] keys? \(rate limit key r[1-3] 2 per 1s(, …)?\)$/);
    for (const id of runIds) expect((await client.waitForRun(id, { timeout: "30s" })).status).toBe("success");
    const spans = await keyedSpans("rated_key");
    for (const [key, list] of byKey(spans)) {
      const starts = list.map((s) => s.start).sort((a, b) => a - b);
      // As for the task-wide rate limit: admitted by Redis time, recorded later by PostgreSQL (up to
      // ~300 ms later with three test files loading two cores), so windows are read 400 ms short.
      const busiest = Math.max(...starts.map((t) => starts.filter((u) => u >= t && u < t + 600).length));
      expect(busiest, `${key}: starts at ${starts.map((t) => t - starts[0]!).join(", ")} ms`).toBeLessThanOrEqual(2);
      expect(starts[0]! - triggeredAt, `${key} starts at once`).toBeLessThan(1000);
      expect(starts.at(-1)! - starts[0]!, key).toBeGreaterThanOrEqual(1900);
      // The key's line lets its runs through in trigger order, a window of two at a time (which of
      // a window's two starts first is a race). The first two had a free key: whichever reached a
      // gate first went, so they are left out.
      const order = [...list].sort((a, b) => a.start - b.start).map((s) => runIds.indexOf(s.runId));
      const lined = order.slice(2);
      for (let w = 0; w + 2 < lined.length; w += 2) {
        expect(Math.max(...lined.slice(w, w + 2)), `${key}: runs started in the order ${order.join(", ")}`).toBeLessThan(
          Math.min(...lined.slice(w + 2, w + 4)),
        );
      }
    }
  });

  it("rateLimit { max: 1, per: 2s, key } on a node after another: each start waits its turn, none continues in its upstream's slot", async () => {
    const runIds = await client.triggerFlows(
      "rated_next",
      [0, 1, 2].map((i) => ({ user_id: "n1", i })),
    );
    for (const id of runIds) expect((await client.waitForRun(id, { timeout: "30s" })).status).toBe("success");
    const starts = (await keyedSpans("rated_next")).map((s) => s.start).sort((a, b) => a - b);
    expect(starts).toHaveLength(3);
    // Windows read 400 ms short, as above: admitted by Redis time, recorded later by PostgreSQL.
    for (let i = 1; i < starts.length; i++) expect(starts[i]! - starts[i - 1]!, `starts ${starts.join(", ")}`).toBeGreaterThanOrEqual(1600);
  });

  it("rateLimit { max: 1, per: 3s, key }: a run cancelled while it waits its turn does not hold back the one behind it", async () => {
    // The first alone, so that it is the one the free key lets through.
    const first = await client.triggerFlow("rated_slow", { user_id: "c1", i: 0 });
    expect((await client.waitForRun(first, { timeout: "30s" })).status).toBe("success");
    const [cancelled, behind] = await client.triggerFlows(
      "rated_slow",
      [1, 2].map((i) => ({ user_id: "c1", i })),
    );
    // Both wait in the key's line, told turns 3 s and 6 s after the first's start.
    await waitUntil(async () => {
      const runs = await Promise.all([cancelled!, behind!].map((id) => client.getRun(id)));
      return runs.every((run) => run?.tasks[0]?.waitingFor?.startsWith("rate limit key c1"));
    }, 10_000);
    await client.cancel(cancelled!);
    expect((await client.waitForRun(behind!, { timeout: "30s" })).status).toBe("success");
    const starts = new Map((await keyedSpans("rated_slow")).map((s) => [s.runId, s.start]));
    expect(starts.has(cancelled!)).toBe(false);
    // Its turn: 6 s after the first (3 s if it reached the gate before the cancelled one, which
    // then took the turn ahead of it). Had the cancelled run kept its place until a lease (5 s)
    // past its own turn, the third would have waited until 8 s at least.
    const after = starts.get(behind!)! - starts.get(first!)!;
    expect(after).toBeGreaterThanOrEqual(2900);
    expect(after).toBeLessThan(7500);
  });

  it("one key with 2,000 queued runs does not hold back 50 other keys: they start within 1 s (median)", async () => {
    const burstAt = Date.now();
    for (let sent = 0; sent < 2000; sent += 500) {
      await client.triggerFlows(
        "burst_order",
        Array.from({ length: 500 }, (_, i) => ({ user_id: "hot", i: sent + i })),
      );
    }
    // Each job of the busy key is fetched once and parked in the key's line, out of the queue.
    await waitUntil(async () => ((await client.listBusyKeys("burst_order"))[0]?.waiting ?? 0) >= 1900, 30_000);
    const parkedMs = Date.now() - burstAt;
    const others = await client.triggerFlows(
      "burst_order",
      Array.from({ length: 50 }, (_, i) => ({ user_id: `cold_${i}` })),
    );
    for (const id of others) expect((await client.waitForRun(id, { timeout: "30s" })).status).toBe("success");
    const waits = await env.sql<{ wait_ms: number }>(
      `select extract(epoch from a.started_at - r.created_at) * 1000 as wait_ms
       from runs r join attempts a on a.run_id = r.id where r.id = any($1::uuid[])`,
      [others],
    );
    const ms = waits.map((w) => Number(w.wait_ms)).sort((a, b) => a - b);
    console.log(
      `2,000 runs of one key triggered and parked in ${parkedMs} ms; then 50 other keys: trigger -> start p50 ${Math.round(ms[24]!)} ms, max ${Math.round(ms.at(-1)!)} ms`,
    );
    expect(ms).toHaveLength(50);
    // Within 1 s on an idle machine (the median here); the slowest up to 1.6 s with three test files
    // loading two cores. Held behind the hot key's line, they would wait for its 2,000 runs.
    expect(ms[24]!).toBeLessThan(1000);
    expect(ms.at(-1)!).toBeLessThan(3000);
    // The queue says what holds its delayed jobs, as `ax queues` and the console show it.
    const queue = (await client.listQueues()).find((q) => q.task === "burst_order")!;
    expect(queue.limited).toMatch(/^concurrency key: \d+ runs waiting on 1 key \(ax queues --keys burst_order\)$/);
    const busiest = await client.listBusyKeys("burst_order");
    expect(busiest[0]!.key).toBe("hot");
    expect(busiest[0]!.running).toBeLessThanOrEqual(1);
    expect(busiest[0]!.waiting).toBeGreaterThan(1000);
  }, 60_000);
});
